#!/usr/bin/env bash
# Cluster mode on one machine: three Kafka brokers (KRaft, three voters; topics with replication factor 3 and
# min.insync.replicas 2), a Redis Cluster (three masters, a replica each), every API twice behind HAProxy and
# every worker role twice, under a supervisord of its own. PostgreSQL is the one `make infra` runs, with a
# database of its own, so this runs beside the single-node stack (`make up`) without touching it.
#
#   cluster.sh up | down | status | env | clean
#   cluster.sh tools                             install what it runs (redis-server, haproxy, java) if missing
#   cluster.sh redis-up | redis-down             the Redis Cluster alone (integration tests)
#   cluster.sh kafka-kill N | kafka-start N      broker N (1-3): SIGKILL, start again
#   cluster.sh redis-kill PORT | redis-start PORT
#
# Environment: CLUSTER_DIR (var/cluster), CLUSTER_PORT (7000; every port is derived from it, docs/cluster.md),
# CLUSTER_REDIS_PORT (first of the six Redis ports; CLUSTER_PORT + 101), CLUSTER_DATABASE (ticketing_cluster),
# CLUSTER_FRESH=1 (drop the database and migrate it anew). `down` keeps the data, `clean` removes it.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/deploy/local"
DIR="${CLUSTER_DIR:-$REPO/var/cluster}"
RUN="$DIR/run"
LOG="$DIR/log"
P="${CLUSTER_PORT:-7000}"
DATABASE="${CLUSTER_DATABASE:-ticketing_cluster}"
PYTHON="$REPO/.venv/bin/python"
KAFKA_LIBS="$REPO/var/kafka/libs"
REDIS_FIRST="${CLUSTER_REDIS_PORT:-$((P + 101))}"
REDIS_PORTS=($(seq "$REDIS_FIRST" $((REDIS_FIRST + 5))))
REDIS_NODE_TIMEOUT_MS=2000  # a dead master's replica takes over after about this (fault runs)
BROKERS=(1 2 3)
SUPERVISOR_CONF="$DIR/supervisord.conf"
CTL=("$REPO/.venv/bin/supervisorctl" -c "$SUPERVISOR_CONF")
READY_TIMEOUT=180

# Ports: the front doors (HAProxy) P+1..3, each instance P+<service base>+<1|2>, the dev components, Redis,
# then Kafka's client (P+111..113) and controller (P+121..123) ports.
HOLD_PORT=$((P + 1)) PAYMENT_PORT=$((P + 2)) VOUCHER_PORT=$((P + 3))
SIM_PORT=$((P + 80)) SMTP_PORT=$((P + 85)) STATS_PORT=$((P + 90))
declare -A BASE=([hold-api]=10 [payment-api]=20 [voucher-api]=30 [notifier]=40 [hold-worker]=50
                 [payment-worker]=60 [voucher-worker]=70)
instance_port() { echo $((P + BASE[$1] + $2)); }
kafka_port() { echo $((P + 110 + $1)); }
controller_port() { echo $((P + 120 + $1)); }
bootstrap() { local n out=(); for n in "${BROKERS[@]}"; do out+=("127.0.0.1:$(kafka_port "$n")"); done; (IFS=,; echo "${out[*]}"); }
redis_nodes() { local p out=(); for p in "${REDIS_PORTS[@]}"; do out+=("127.0.0.1:$p"); done; (IFS=,; echo "${out[*]}"); }

NAME=cluster
source "$HERE/common.sh"

# ---------------------------------------------------------------- packages

ensure_packages() { # [redis-only]
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  if [[ "${1:-}" != redis-only ]]; then
    command -v haproxy >/dev/null || missing+=(haproxy)
    command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  fi
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    # The packages may start daemons of their own (an HAProxy on its stock configuration, a Redis with
    # persistence on 6379, where `make infra` wants its own): stop those, by their pid files.
    if [[ " ${missing[*]} " == *" haproxy "* && -s /run/haproxy.pid ]]; then kill "$(cat /run/haproxy.pid)" || true; fi
    if [[ " ${missing[*]} " == *" redis-server "* ]]; then redis-cli -p 6379 shutdown nosave >/dev/null 2>&1 || true; fi
  fi
  mkdir -p "$RUN" "$LOG"
}

# ---------------------------------------------------------------- redis cluster

redis_port_up() { [[ "$(redis-cli -p "$1" ping 2>/dev/null)" == PONG ]]; }

redis_node_start() { # port
  local port="$1" dir="$DIR/redis/$1"
  mkdir -p "$dir" "$RUN" "$LOG"
  redis_port_up "$port" && return 0
  # No persistence: what a node held is gone when it dies; its replica has it (or the services rebuild it).
  # A shard without a master (one failing over) stops only its own slots, not the whole cluster.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" --save "" --appendonly no \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$REDIS_NODE_TIMEOUT_MS" \
    --cluster-replica-validity-factor 0 --cluster-require-full-coverage no --pidfile "$RUN/redis-$port.pid" --logfile "$LOG/redis-$port.log" \
    || fail_with_log "redis-server $port failed to start" "$LOG/redis-$port.log"
  wait_until 30 redis_port_up "$port" || fail_with_log "redis $port not answering" "$LOG/redis-$port.log"
}

redis_assigned() { redis-cli -p "$REDIS_FIRST" cluster info 2>/dev/null | grep -q '^cluster_slots_assigned:16384'; }

# Every node agrees on the slot map, every slot served, every replica in sync with its master.
redis_settled() {
  redis-cli --cluster check "127.0.0.1:$REDIS_FIRST" >/dev/null 2>&1 || return 1
  local port
  for port in "${REDIS_PORTS[@]}"; do
    redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    if redis-cli -p "$port" info replication 2>/dev/null | grep -q '^role:slave'; then
      redis-cli -p "$port" info replication | grep -q '^master_link_status:up' || return 1
    fi
  done
}

redis_up() {
  local port
  for port in "${REDIS_PORTS[@]}"; do redis_node_start "$port"; done
  if ! redis_assigned; then
    log "creating the Redis Cluster on ports ${REDIS_PORTS[0]}-${REDIS_PORTS[5]} (3 masters, 3 replicas)"
    redis-cli --cluster create $(redis_nodes | tr , ' ') --cluster-replicas 1 --cluster-yes >"$LOG/redis-create.log" 2>&1 \
      || fail_with_log "redis-cli --cluster create failed" "$LOG/redis-create.log"
  fi
  wait_until 60 redis_settled || { redis-cli --cluster check "127.0.0.1:$REDIS_FIRST" >&2 || true
                                   die "the Redis Cluster did not settle in 60 s"; }
}

redis_node_kill() { # port
  local pidfile="$RUN/redis-$1.pid"
  [[ -f "$pidfile" ]] || die "no pid file for redis $1"
  kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
}

redis_down() {
  local port
  for port in "${REDIS_PORTS[@]}"; do
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
}

# ---------------------------------------------------------------- kafka (three KRaft nodes)

kafka_props() { echo "$DIR/kafka/$1/server.properties"; }

kafka_render() {
  local voters=() n
  for n in "${BROKERS[@]}"; do voters+=("$n@127.0.0.1:$(controller_port "$n")"); done
  for n in "${BROKERS[@]}"; do
    mkdir -p "$DIR/kafka/$n/data"
    sed -e "s|@NODE_ID@|$n|" -e "s|@VOTERS@|$(IFS=,; echo "${voters[*]}")|" -e "s|@PORT@|$(kafka_port "$n")|g" \
        -e "s|@CONTROLLER_PORT@|$(controller_port "$n")|" -e "s|@LOG_DIRS@|$DIR/kafka/$n/data|" \
        "$HERE/cluster/kafka.properties.in" >"$(kafka_props "$n")"
  done
}

kafka_format() {
  local id_file="$DIR/kafka/cluster.id" n
  [[ -s "$id_file" ]] || java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$id_file"
  for n in "${BROKERS[@]}"; do
    [[ -f "$DIR/kafka/$n/data/meta.properties" ]] && continue
    java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$(cat "$id_file")" -c "$(kafka_props "$n")" \
      >>"$LOG/kafka-$n.log" 2>&1 || fail_with_log "formatting broker $n failed" "$LOG/kafka-$n.log"
  done
}

# A pid counts only if it is a live kafka.Kafka process started from this broker's properties (pids get reused).
kafka_pid() { # n
  local pid=""
  [[ -f "$RUN/kafka-$1.pid" ]] && pid="$(cat "$RUN/kafka-$1.pid")"
  [[ -n "$pid" && -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$(kafka_props "$1")" \
    && [[ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)" != Z ]] && echo "$pid"
}

kafka_node_start() { # n
  [[ -n "$(kafka_pid "$1" || true)" ]] && return 0
  log "starting kafka broker $1 on 127.0.0.1:$(kafka_port "$1")"
  (
    cd "$REPO"
    setsid nohup java -Xms256m -Xmx512m -XX:+UseG1GC -Dorg.slf4j.simpleLogger.showDateTime=true \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$(kafka_props "$1")" >>"$LOG/kafka-$1.log" 2>&1 </dev/null &
    echo $! >"$RUN/kafka-$1.pid"
  )
}

kafka_wait_ready() {
  "$PYTHON" "$HERE/kafka_ready.py" --bootstrap "$(bootstrap)" --brokers 3 --timeout "$READY_TIMEOUT" \
    || fail_with_log "the three brokers were not all up after ${READY_TIMEOUT}s" "$LOG/kafka-1.log"
}

kafka_up() {
  "$HERE/infra.sh" kafka-libs >/dev/null
  kafka_render
  kafka_format
  local n
  for n in "${BROKERS[@]}"; do kafka_node_start "$n"; done  # together: a lone voter waits for a quorum
  kafka_wait_ready
}

kafka_node_kill() { # n
  local pid
  pid="$(kafka_pid "$1" || true)"
  [[ -n "$pid" ]] || { log "broker $1 is not running"; return 0; }
  kill -9 "$pid"
  wait_until 30 bash -c "! kill -0 $pid 2>/dev/null" || die "broker $1 survived SIGKILL"
  rm -f "$RUN/kafka-$1.pid"
}

kafka_down() {
  local n pid pids=()
  for n in "${BROKERS[@]}"; do
    pid="$(kafka_pid "$n" || true)"
    [[ -n "$pid" ]] && { kill -TERM "$pid"; pids+=("$pid"); }
  done
  # All three at once: the last broker standing would wait for a quorum that never comes.
  for pid in "${pids[@]}"; do
    wait_until 60 bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
  done
  rm -f "$RUN"/kafka-*.pid
}

# ---------------------------------------------------------------- postgres database

database_up() {
  pg_isready -q -h 127.0.0.1 -p 5432 -t 2 || "$HERE/infra.sh" pg-start
  if [[ "${CLUSTER_FRESH:-}" == 1 ]]; then
    "$HERE/migrate.sh" --fresh "$DATABASE" >"$LOG/migrate.log" 2>&1 || fail_with_log "migrations failed" "$LOG/migrate.log"
  else
    PROVISION_DATABASES="$DATABASE" "$HERE/provision_db.sh" >"$LOG/migrate.log" 2>&1 \
      && "$HERE/migrate.sh" "$DATABASE" >>"$LOG/migrate.log" 2>&1 || fail_with_log "migrations failed" "$LOG/migrate.log"
  fi
}

topics_up() {
  KAFKA_BOOTSTRAP_SERVERS="$(bootstrap)" KAFKA_TOPIC_REPLICATION_FACTOR=3 KAFKA_TOPIC_MIN_INSYNC_REPLICAS=2 \
    "$REPO/.venv/bin/ticketing" topics
}

# ---------------------------------------------------------------- the services (supervisord) and HAProxy

source "$HERE/cluster/apps.sh"

# ---------------------------------------------------------------- commands

cmd_env() {
  cat <<ENV
KAFKA_BOOTSTRAP_SERVERS=$(bootstrap)
REDIS_CLUSTER_NODES=$(redis_nodes)
CLUSTER_DATABASE=$DATABASE
HOLD_URL=http://127.0.0.1:$HOLD_PORT
PAYMENT_URL=http://127.0.0.1:$PAYMENT_PORT
VOUCHER_URL=http://127.0.0.1:$VOUCHER_PORT
GATEWAY_URL=http://127.0.0.1:$SIM_PORT
SMTP_PORT=$SMTP_PORT
MAIL_DIR=$DIR/mail
HAPROXY_STATS_URL=http://127.0.0.1:$STATS_PORT/
SUPERVISOR_CONF=$SUPERVISOR_CONF
ENV
}

up_line() { # name check... -> prints a status line, fails when down
  local name="$1" where="$2"
  shift 2
  if "$@"; then printf '%-22s up    %s\n' "$name" "$where"; else printf '%-22s DOWN  %s\n' "$name" "$where"; return 1; fi
}

cmd_status() {
  local rc=0 n port
  for n in "${BROKERS[@]}"; do
    up_line "kafka-$n" "127.0.0.1:$(kafka_port "$n")" test -n "$(kafka_pid "$n" || true)" || rc=3
  done
  for port in "${REDIS_PORTS[@]}"; do
    local role
    role="$(redis-cli -p "$port" info replication 2>/dev/null | sed -n 's/^role:\(.*\)\r$/\1/p')"
    up_line "redis-$port" "127.0.0.1:$port ${role:-}" redis_port_up "$port" || rc=3
  done
  apps_status || rc=3
  return "$rc"
}

cmd_up() {
  local started=$SECONDS
  ensure_packages
  database_up
  redis_up
  kafka_up
  topics_up
  apps_up
  log "up in $((SECONDS - started)) s"
  apps_table
}

cmd_down() {
  apps_down
  kafka_down
  redis_down
  log "stopped (data kept in $DIR; cluster.sh clean removes it)"
}

cmd_clean() {
  cmd_down
  rm -rf "$DIR/kafka" "$DIR/redis" "$DIR/run" "$DIR/mail" "$DIR/faust"
}

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  clean) cmd_clean ;;
  status) cmd_status ;;
  env) cmd_env ;;
  tools) ensure_packages ;;
  redis-up) ensure_packages redis-only && redis_up ;;
  redis-down) redis_down; rm -rf "$DIR/redis" ;;
  kafka-kill) kafka_node_kill "${2:?broker number}" ;;
  kafka-start) kafka_node_start "${2:?broker number}" && kafka_wait_ready ;;
  redis-kill) redis_node_kill "${2:?port}" ;;
  redis-start) redis_node_start "${2:?port}" ;;
  *) usage ;;
esac
