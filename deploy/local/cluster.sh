#!/usr/bin/env bash
# Cluster mode on one machine: three Kafka brokers (KRaft, three voters; topics with replication factor 3 and
# min.insync.replicas 2), a Redis Cluster (three masters, a replica each), every API twice behind HAProxy and
# every worker role twice, under a supervisord of its own, and PostgreSQL as a Patroni cluster (three nodes, etcd,
# synchronous mode) behind an HAProxy that follows the primary. Every port and directory is its own, so this runs
# beside the single-node stack (`make up`) without touching it.
#
#   cluster.sh up | down | status | env | clean
#   cluster.sh tools [haproxy-only]              install what it runs (redis-server, haproxy, java) if missing
#   cluster.sh haproxy-config                    write (and check) the APIs' HAProxy configuration alone
#   cluster.sh redis-up | redis-down             the Redis Cluster alone (integration tests)
#   cluster.sh kafka-kill N | kafka-start N      broker N (1-3): SIGKILL, start again
#   cluster.sh redis-kill PORT | redis-start PORT
#   cluster.sh pg-up | pg-down                   the Patroni cluster alone, with the database migrated
#   cluster.sh pg-primary | pg-kill N | pg-settle   the primary's node (1-3); SIGKILL node N's PostgreSQL;
#                                                wait until a primary and two streaming standbys
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

# Ports: the front doors (HAProxy) P+1..4 (4: hold-service's internal API, the other services' door), each
# instance P+<service base>+<1|2>, the dev components, Redis, then Kafka's client (P+111..113) and controller
# (P+121..123) ports.
HOLD_PORT=$((P + 1)) PAYMENT_PORT=$((P + 2)) VOUCHER_PORT=$((P + 3)) HOLD_INTERNAL_PORT=$((P + 4))
SIM_PORT=$((P + 80)) SMTP_PORT=$((P + 85)) STATS_PORT=$((P + 90))
declare -A BASE=([hold-api]=10 [payment-api]=20 [voucher-api]=30 [notifier]=40 [hold-worker]=50
                 [payment-worker]=60 [voucher-worker]=70 [hold-api-internal]=75)
instance_port() { echo $((P + BASE[$1] + $2)); }
kafka_port() { echo $((P + 110 + $1)); }
controller_port() { echo $((P + 120 + $1)); }
bootstrap() { local n out=(); for n in "${BROKERS[@]}"; do out+=("127.0.0.1:$(kafka_port "$n")"); done; (IFS=,; echo "${out[*]}"); }
redis_nodes() { local p out=(); for p in "${REDIS_PORTS[@]}"; do out+=("127.0.0.1:$p"); done; (IFS=,; echo "${out[*]}"); }

NAME=cluster
source "$HERE/common.sh"

# ---------------------------------------------------------------- packages

ensure_packages() { # [redis-only | haproxy-only]
  local missing=()
  [[ "${1:-}" == haproxy-only ]] || command -v redis-server >/dev/null || missing+=(redis-server)
  [[ "${1:-}" != haproxy-only ]] || command -v haproxy >/dev/null || missing+=(haproxy)
  if [[ -z "${1:-}" ]]; then
    command -v haproxy >/dev/null || missing+=(haproxy)
    command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
    [[ -x /usr/bin/patroni ]] || missing+=(patroni)
    command -v etcd >/dev/null || missing+=(etcd-server)
    [[ -x /usr/lib/postgresql/15/bin/pg_ctl ]] || missing+=(postgresql-15)
  fi
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    # The packages may start daemons of their own (an HAProxy on its stock configuration, a Redis with
    # persistence on 6379, where `make infra` wants its own): stop those, by their pid files.
    if [[ " ${missing[*]} " == *" haproxy "* && -s /run/haproxy.pid ]]; then kill "$(cat /run/haproxy.pid)" || true; fi
    if [[ " ${missing[*]} " == *" etcd-server "* && -n "$(pgrep -x etcd || true)" ]]; then
      [[ -x /etc/init.d/etcd ]] && /etc/init.d/etcd stop || true
    fi
    if [[ " ${missing[*]} " == *" redis-server "* ]]; then redis-cli -p 6379 shutdown nosave >/dev/null 2>&1 || true; fi
  fi
  mkdir -p "$RUN" "$LOG"
}

# ---------------------------------------------------------------- the parts

source "$HERE/cluster/redis.sh"
source "$HERE/cluster/kafka.sh"
source "$HERE/cluster/postgres.sh"

topics_up() {
  KAFKA_BOOTSTRAP_SERVERS="$(bootstrap)" KAFKA_TOPIC_REPLICATION_FACTOR=3 KAFKA_TOPIC_MIN_INSYNC_REPLICAS=2 \
    "$REPO/.venv/bin/ticketing" topics
}

source "$HERE/cluster/apps.sh"  # the services (supervisord) and HAProxy

# ---------------------------------------------------------------- commands

cmd_env() {
  cat <<ENV
KAFKA_BOOTSTRAP_SERVERS=$(bootstrap)
REDIS_CLUSTER_NODES=$(redis_nodes)
CLUSTER_DATABASE=$DATABASE
DATABASE_ADDRESS=127.0.0.1:$PG_FRONT_PORT
HOLD_URL=http://127.0.0.1:$HOLD_PORT
HOLD_INTERNAL_URL=http://127.0.0.1:$HOLD_INTERNAL_PORT
PAYMENT_URL=http://127.0.0.1:$PAYMENT_PORT
VOUCHER_URL=http://127.0.0.1:$VOUCHER_PORT
GATEWAY_URL=http://127.0.0.1:$SIM_PORT
SMTP_PORT=$SMTP_PORT
MAIL_DIR=$DIR/mail
LOG_DIR=$LOG
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
    role="$(redis-cli -p "$port" info replication 2>/dev/null | sed -n 's/^role:\(.*\)\r$/\1/p' || true)"
    up_line "redis-$port" "127.0.0.1:$port ${role:-}" redis_port_up "$port" || rc=3
  done
  pg_status || rc=3
  apps_status || rc=3
  return "$rc"
}

cmd_up() {
  local started=$SECONDS
  ensure_packages
  pg_up
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
  pg_down
  log "stopped (data kept in $DIR; cluster.sh clean removes it)"
}

cmd_clean() {
  cmd_down
  rm -rf "$DIR/kafka" "$DIR/redis" "$DIR/pg" "$DIR/run" "$DIR/mail" "$DIR/faust"
}

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  clean) cmd_clean ;;
  status) cmd_status ;;
  env) cmd_env ;;
  tools) ensure_packages "${2:-}" ;;
  haproxy-config) ensure_packages haproxy-only && haproxy_render && echo "$DIR/haproxy.cfg" ;;
  redis-up) ensure_packages redis-only && redis_up ;;
  redis-down) redis_down; rm -rf "$DIR/redis" ;;
  kafka-kill) kafka_node_kill "${2:?broker number}" ;;
  kafka-start) kafka_node_start "${2:?broker number}" && kafka_wait_ready ;;
  redis-kill) redis_node_kill "${2:?port}" ;;
  redis-start) redis_node_start "${2:?port}" ;;
  pg-up) ensure_packages && pg_up ;;
  pg-down) pg_down ;;
  pg-primary) pg_primary ;;
  pg-kill) pg_node_kill "${2:?node number}" ;;
  pg-settle) wait_until "${2:-120}" pg_settled || { pg_members >&2 || true; die "the Patroni cluster did not settle"; } ;;
  *) usage ;;
esac
