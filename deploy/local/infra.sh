#!/usr/bin/env bash
# Native local infrastructure (no Docker): PostgreSQL 15, Redis 7, Kafka 4.0.2 (KRaft, one node).
#
#   infra.sh up | down | status
#   infra.sh kafka-libs        resolve the broker's jars into var/kafka/libs only (the kafka image uses them)
#   infra.sh kafka-kill | kafka-start | redis-restart | redis-stop | redis-start | pg-restart | pg-stop | pg-start
#
# Every step is idempotent: what is installed or running is left alone. Runtime files live under
# <repo>/var (git-ignored). Needs root (apt-get, runuser). See deploy/README.md.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/deploy/local"
VAR="$REPO/var"
RUN_DIR="$VAR/run"
LOG_DIR="$VAR/log"
KAFKA_DIR="$VAR/kafka"
KAFKA_LIBS="$KAFKA_DIR/libs"
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_PROPS="$KAFKA_DIR/server.properties"
KAFKA_PID="$RUN_DIR/kafka.pid"
KAFKA_LOG="$LOG_DIR/kafka.log"
KAFKA_POM="$HERE/kafka/pom.xml"
KAFKA_LIBS_MARKER="$KAFKA_LIBS/.resolved"
# The Redis the redis-* commands act on: 6379 unless REDIS_PORT names another (a test restarting the Redis
# its own REDIS_URL points at, beside a dev Redis it must not touch).
REDIS_PORT="${REDIS_PORT:-6379}"
REDIS_PID="$RUN_DIR/redis.pid"
REDIS_LOG="$LOG_DIR/redis.log"
PG_VERSION=15
PG_CLUSTER=main
PG_LOG="/var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log"
PG_MAX_CONNECTIONS=300
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"

PG_READY_TIMEOUT=60
REDIS_READY_TIMEOUT=30
KAFKA_READY_TIMEOUT=120
KAFKA_STOP_TIMEOUT=60

APT_UPDATED=""

NAME=infra
source "$HERE/common.sh"

# ---------------------------------------------------------------- packages

apt_install() { # packages...
  if [[ -z "$APT_UPDATED" ]]; then
    apt-get update -q
    APT_UPDATED=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

ensure_command() { # command package
  command -v "$1" >/dev/null 2>&1 || apt_install "$2"
}

# redis-server is installed by redis_install_and_take_over (the package may start its own daemon).
ensure_packages() {
  [[ -x /usr/lib/postgresql/$PG_VERSION/bin/postgres ]] || apt_install postgresql
  ensure_command pgrep procps
  ensure_command java openjdk-17-jre-headless
  ensure_command mvn maven
  ensure_command openssl openssl
}

ensure_dirs() {
  mkdir -p "$RUN_DIR" "$LOG_DIR" "$KAFKA_LIBS" "$KAFKA_DATA"
}

# ---------------------------------------------------------------- postgres

pg_ctl() { pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_CLUSTER" "$@"; }

pg_running() { pg_ctl status >/dev/null 2>&1; }

pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 -t 2; }

pg_sql() { # sql -> unaligned single value
  runuser -u postgres -- psql -X -q -tA -v ON_ERROR_STOP=1 -d postgres -c "$1"
}

pg_wait_ready() {
  wait_until "$PG_READY_TIMEOUT" pg_ready \
    || fail_with_log "postgres not ready on 127.0.0.1:5432 after ${PG_READY_TIMEOUT}s" "$PG_LOG"
}

ensure_pg_cluster() {
  pg_lsclusters -h "$PG_VERSION" "$PG_CLUSTER" 2>/dev/null | grep -q . \
    || pg_createcluster "$PG_VERSION" "$PG_CLUSTER"
}

pg_start() {
  ensure_pg_cluster
  if ! pg_running; then
    log "starting postgres $PG_VERSION/$PG_CLUSTER"
    pg_ctl start || fail_with_log "postgres failed to start" "$PG_LOG"
  fi
  pg_wait_ready
}

# max_connections needs a restart, so restart only when the running value differs.
pg_ensure_max_connections() {
  [[ "$(pg_sql 'SHOW max_connections')" == "$PG_MAX_CONNECTIONS" ]] && return 0
  log "setting postgres max_connections = $PG_MAX_CONNECTIONS (restart)"
  pg_sql "ALTER SYSTEM SET max_connections = $PG_MAX_CONNECTIONS" >/dev/null
  pg_restart
}

# Debian's cluster serves TLS with a snakeoil certificate; clients default to sslmode=prefer and so pay for
# TLS on every loopback connection (a few % of a hold-service worker's CPU under load). Off locally; a
# deployment that needs TLS says sslmode=require in its DSN. Reloadable, no restart.
pg_ensure_no_tls() {
  [[ "$(pg_sql 'SHOW ssl')" == "off" ]] && return 0
  log "setting postgres ssl = off (loopback only; reload)"
  pg_sql "ALTER SYSTEM SET ssl = off" >/dev/null
  pg_sql "SELECT pg_reload_conf()" >/dev/null
}

pg_restart() {
  pg_ctl restart -m fast || fail_with_log "postgres failed to restart" "$PG_LOG"
  pg_wait_ready
}

pg_stop() {
  if pg_running; then
    log "stopping postgres"
    pg_ctl stop -m fast
  fi
}

# ---------------------------------------------------------------- redis

redis_cli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

redis_up() { [[ "$(redis_cli ping 2>/dev/null)" == "PONG" ]]; }

redis_down() { ! redis_up; }

redis_start() {
  redis_up && return 0
  log "starting redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" \
    || fail_with_log "redis-server failed to start" "$REDIS_LOG"
  wait_until "$REDIS_READY_TIMEOUT" redis_up \
    || fail_with_log "redis did not answer PONG after ${REDIS_READY_TIMEOUT}s" "$REDIS_LOG"
}

redis_stop() {
  redis_up || return 0
  log "stopping redis"
  redis_cli shutdown nosave >/dev/null 2>&1 || true
  wait_until "$REDIS_READY_TIMEOUT" redis_down || die "redis still answering after shutdown"
  rm -f "$REDIS_PID"
}

# The Debian package may start its own redis (with persistence) on install; replace it with ours.
redis_install_and_take_over() {
  command -v redis-server >/dev/null 2>&1 && return 0
  apt_install redis-server
  redis_stop
}

# ---------------------------------------------------------------- kafka

kafka_resolve_libs() {
  local wanted
  wanted="$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)"
  [[ -f "$KAFKA_LIBS_MARKER" && "$(cat "$KAFKA_LIBS_MARKER")" == "$wanted" ]] && return 0
  log "resolving kafka jars from Maven Central into var/kafka/libs"
  rm -rf "$KAFKA_LIBS"
  mkdir -p "$KAFKA_LIBS"
  mvn -q -B -f "$KAFKA_POM" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS" >>"$LOG_DIR/maven.log" 2>&1 \
    || fail_with_log "maven could not resolve kafka" "$LOG_DIR/maven.log"
  echo "$wanted" >"$KAFKA_LIBS_MARKER"
}

kafka_java() { # main-class args...
  java -cp "$KAFKA_LIBS/*" "$@"
}

kafka_render_props() {
  sed "s|@LOG_DIRS@|$KAFKA_DATA|" "$HERE/kafka/server.properties.in" >"$KAFKA_PROPS"
}

kafka_format_storage() {
  [[ -f "$KAFKA_DATA/meta.properties" ]] && return 0
  local cluster_id
  cluster_id="$(kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  [[ -n "$cluster_id" ]] || die "kafka StorageTool random-uuid printed nothing"
  log "formatting kafka storage (cluster id $cluster_id)"
  kafka_java kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_PROPS" >>"$KAFKA_LOG" 2>&1 \
    || fail_with_log "kafka storage format failed" "$KAFKA_LOG"
}

# A pid counts only if it is a live (not zombie) kafka.Kafka process: pids get reused.
kafka_pid_alive() { # pid
  local pid="$1" state
  [[ -n "$pid" && -r /proc/$pid/stat ]] || return 1
  state="$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  [[ "$state" != "Z" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka'
}

# The pid file, or (if it was lost) a broker started from our own properties file.
kafka_pid() {
  local pid=""
  [[ -f "$KAFKA_PID" ]] && pid="$(cat "$KAFKA_PID")"
  kafka_pid_alive "$pid" || pid="$(pgrep -f "kafka\.Kafka $KAFKA_PROPS" | head -n 1 || true)"
  kafka_pid_alive "$pid" && echo "$pid"
}

kafka_running() { [[ -n "$(kafka_pid || true)" ]]; }

kafka_gone() { ! kafka_running; }

kafka_wait_ready() {
  local pid="$1"
  if "$PYTHON" -c 'import aiokafka' 2>/dev/null; then
    "$PYTHON" "$HERE/kafka_ready.py" --bootstrap 127.0.0.1:9092 --timeout "$KAFKA_READY_TIMEOUT" --pid "$pid" \
      || fail_with_log "kafka not ready on 127.0.0.1:9092" "$KAFKA_LOG"
  else
    # Weaker check for the bootstrap case where the project venv does not exist yet.
    log "WARNING: $PYTHON has no aiokafka; waiting for the port only (set PYTHON to check metadata)"
    wait_until "$KAFKA_READY_TIMEOUT" port_open 9092 \
      || fail_with_log "kafka port 9092 not open after ${KAFKA_READY_TIMEOUT}s" "$KAFKA_LOG"
  fi
}

kafka_launch() {
  log "starting kafka"
  # Subshell + setsid: the broker is re-parented away from this script and its terminal.
  (
    cd "$REPO"
    setsid nohup java -Xms512m -Xmx1g -XX:+UseG1GC -Dorg.slf4j.simpleLogger.showDateTime=true \
      "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS" \
      >>"$KAFKA_LOG" 2>&1 </dev/null &
    echo $! >"$KAFKA_PID"
  )
}

# A broker this checkout did not start already serves the port (another checkout of the repository, or one
# started by hand): use it, rather than start a second one that cannot bind the port.
kafka_served_elsewhere() {
  [[ -z "$(kafka_pid || true)" ]] && port_open 9092 || return 1
  if "$PYTHON" -c 'import aiokafka' 2>/dev/null; then
    "$PYTHON" "$HERE/kafka_ready.py" --bootstrap 127.0.0.1:9092 --timeout 15 >/dev/null 2>&1 \
      || die "127.0.0.1:9092 is taken by a process that does not answer as a Kafka broker"
  fi
}

kafka_start() {
  if kafka_served_elsewhere; then
    log "kafka: a broker started elsewhere already serves 127.0.0.1:9092; using it"
    return 0
  fi
  ensure_dirs
  kafka_resolve_libs
  kafka_render_props
  kafka_format_storage
  local pid
  pid="$(kafka_pid || true)"
  if [[ -z "$pid" ]]; then
    kafka_launch
    pid="$(cat "$KAFKA_PID")"
  fi
  kafka_wait_ready "$pid"
}

kafka_signal_and_wait() { # signal timeout
  local pid
  pid="$(kafka_pid || true)"
  [[ -n "$pid" ]] || return 0
  kill "-$1" "$pid" 2>/dev/null || true
  wait_until "$2" kafka_gone
}

kafka_stop() {
  kafka_running || { rm -f "$KAFKA_PID"; return 0; }
  log "stopping kafka"
  if ! kafka_signal_and_wait TERM "$KAFKA_STOP_TIMEOUT"; then
    log "kafka ignored SIGTERM for ${KAFKA_STOP_TIMEOUT}s, sending SIGKILL"
    kafka_signal_and_wait KILL 30 || die "kafka survived SIGKILL"
  fi
  rm -f "$KAFKA_PID"
}

kafka_kill() {
  kafka_running || { log "kafka is not running"; return 0; }
  log "killing kafka (SIGKILL)"
  kafka_signal_and_wait KILL 30 || die "kafka survived SIGKILL"
  rm -f "$KAFKA_PID"
  # A large heap takes a while to tear down after the process stops counting as alive; until its socket is
  # closed, a start would take the port for a broker served elsewhere.
  wait_until 30 port_closed 9092 || die "127.0.0.1:9092 still open 30 s after kafka was killed"
}

port_closed() { ! port_open "$1"; }

# ---------------------------------------------------------------- commands

port_open() { # port
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

status_line() { # name up? address
  local state=down
  "$2" && state=up
  printf '%-9s %-4s %s\n' "$1" "$state" "$3"
  [[ "$state" == up ]]
}

# Ours, or one started elsewhere (kafka_served_elsewhere): either way the port answers.
kafka_serving() { port_open 9092; }

cmd_status() {
  local rc=0
  status_line postgres pg_ready 127.0.0.1:5432 || rc=3
  status_line redis redis_up "127.0.0.1:$REDIS_PORT" || rc=3
  status_line kafka kafka_serving 127.0.0.1:9092 || rc=3
  return "$rc"
}

cmd_up() {
  local started=$SECONDS
  ensure_packages
  ensure_dirs
  pg_start
  pg_ensure_max_connections
  pg_ensure_no_tls
  redis_install_and_take_over
  redis_start
  kafka_start
  "$HERE/provision_db.sh"
  log "up in $((SECONDS - started))s"
  cmd_status
}

cmd_down() {
  kafka_stop
  redis_stop
  pg_stop
  cmd_status || true
}

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

main() {
  [[ $# -eq 1 ]] || usage
  case "$1" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kafka-libs) ensure_packages && ensure_dirs && kafka_resolve_libs ;;
    kafka-kill) kafka_kill ;;
    kafka-start) kafka_start ;;
    redis-restart) ensure_dirs && redis_stop && redis_start ;;
    redis-stop) redis_stop ;;
    redis-start) ensure_dirs && redis_start ;;
    pg-restart) pg_restart ;;
    pg-stop) pg_stop ;;
    pg-start) pg_start ;;
    -h | --help | help) usage ;;
    *) usage ;;
  esac
}

main "$@"
