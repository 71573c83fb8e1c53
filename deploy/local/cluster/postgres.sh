# The PostgreSQL of cluster mode: a Patroni cluster of three nodes (one primary, two standbys, synchronous mode),
# etcd as its consensus store, and an HAProxy that sends every connection to whichever node Patroni's REST API
# calls the primary. Sourced by deploy/local/cluster.sh (its ports, paths and helpers).
#
# Ports: etcd P+130 (clients) and P+131 (peers), the nodes' PostgreSQL P+132..134, their Patroni REST APIs
# P+141..143, the primary's front door (HAProxy) P+150, its statistics page P+151.

PG_NODES=(1 2 3)
PG_BIN=/usr/lib/postgresql/15/bin
PG_DIR="$DIR/pg"
ETCD_PORT=$((P + 130)) ETCD_PEER_PORT=$((P + 131))
PG_FRONT_PORT=$((P + 150)) PG_STATS_PORT=$((P + 151))
pg_port() { echo $((P + 131 + $1)); }
rest_port() { echo $((P + 140 + $1)); }
PG_SCOPE="ticketing-$P"

pg_secret() { # name -> a password of this cluster's own, made once (the superuser's, the replication role's)
  local file="$PG_DIR/secret-$1"
  [[ -s "$file" ]] || { head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$file"; chmod 600 "$file"; }
  cat "$file"
}

etcd_up() { curl -fsS "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; }

etcd_start() {
  etcd_up && return 0
  mkdir -p "$PG_DIR/etcd"
  setsid etcd --name etcd1 --data-dir "$PG_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "etcd1=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --enable-v2=true >>"$LOG/etcd.log" 2>&1 </dev/null &
  echo $! >"$RUN/etcd.pid"
  wait_until 30 etcd_up || fail_with_log "etcd did not start" "$LOG/etcd.log"
}

# Failover settings: Patroni looks every second (loop_wait); a primary whose PostgreSQL crashed is not restarted
# in place but failed over at once (primary_start_timeout 0) to the synchronous standby, so that nothing it
# acknowledged is lost; the old primary rejoins as a standby (pg_rewind, else a new copy).
patroni_render() { # node
  local n="$1"
  cat <<YAML
scope: $PG_SCOPE
name: pg$n
log: {level: WARNING}
restapi: {listen: "127.0.0.1:$(rest_port "$n")", connect_address: "127.0.0.1:$(rest_port "$n")"}
etcd3: {hosts: ["127.0.0.1:$ETCD_PORT"]}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 400
        shared_buffers: 64MB
        wal_level: replica
        wal_log_hints: "on"
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
  pg_hba:
    - local all postgres peer
    - local all all scram-sha-256
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: "127.0.0.1:$(pg_port "$n")"
  connect_address: "127.0.0.1:$(pg_port "$n")"
  data_dir: $PG_DIR/data$n
  bin_dir: $PG_BIN
  pgpass: $PG_DIR/pgpass$n
  authentication:
    superuser: {username: postgres, password: "$(pg_secret superuser)"}
    replication: {username: replicator, password: "$(pg_secret replication)"}
  parameters: {unix_socket_directories: /var/run/postgresql}
tags: {nofailover: false, noloadbalance: false, clonefrom: false, nosync: false}
YAML
}

patroni_pid() { local f="$RUN/patroni-$1.pid"; [[ -s "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"; }

patroni_start() { # node
  local n="$1"
  patroni_pid "$n" >/dev/null && return 0
  mkdir -p "$PG_DIR/data$n"
  chmod 700 "$PG_DIR/data$n"
  patroni_render "$n" >"$PG_DIR/patroni$n.yml"
  chown -R postgres:postgres "$PG_DIR"
  # setpriv execs Patroni itself (PostgreSQL refuses to run as root), so $! is Patroni's pid.
  setsid setpriv --reuid=postgres --regid=postgres --init-groups /usr/bin/patroni "$PG_DIR/patroni$n.yml" \
    >>"$LOG/patroni-$n.log" 2>&1 </dev/null &
  echo $! >"$RUN/patroni-$n.pid"
}

# What Patroni says of a node: its role and state, e.g. "leader running" or "sync_standby streaming".
pg_cluster() { curl -fsS "http://127.0.0.1:$(rest_port "${1:-1}")/cluster" 2>/dev/null; }

pg_members() { # -> "name role state lag" lines (lag "-" for the primary), as any live node's REST API sees them
  local n out
  for n in "${PG_NODES[@]}"; do
    out="$(pg_cluster "$n")" && break
  done
  [[ -n "${out:-}" ]] || return 1
  "$PYTHON" -c 'import json, sys
for m in json.loads(sys.argv[1])["members"]:
    print(m["name"], m["role"], m["state"], m.get("lag", "-"))' "$out"
}

pg_primary() { pg_members | awk '$2 == "leader" && $3 == "running" { sub("pg", "", $1); print $1 }'; }

# Settled: a primary, the two standbys streaming with no lag, one of them synchronous, the front door on it.
pg_settled() {
  local members
  members="$(pg_members)" || return 1
  [[ "$(grep -c '^pg. leader running -$' <<<"$members")" == 1 ]] || return 1
  [[ "$(grep -c '^pg. sync_standby \(running\|streaming\) 0$' <<<"$members")" == 1 ]] || return 1
  [[ "$(grep -c '^pg. \(sync_standby\|replica\) \(running\|streaming\) 0$' <<<"$members")" == 2 ]] || return 1
  pg_isready -q -h 127.0.0.1 -p "$PG_FRONT_PORT" -t 2
}

pg_haproxy_render() {
  local n
  {
    cat <<CONF
# Written by deploy/local/cluster.sh (cluster mode); regenerated by every \`cluster.sh up\`.
# Every connection goes to the node whose Patroni answers 200 on /primary; when that changes, the connections to
# the old one are cut (on-marked-down shutdown-sessions), so no client stays on a node that is no longer primary.
global
    maxconn 4096
    pidfile $RUN/haproxy-pg.pid

defaults
    mode tcp
    timeout connect 2s
    timeout client 2h
    timeout server 2h
    timeout check 1s

listen stats
    mode http
    bind 127.0.0.1:$PG_STATS_PORT
    stats enable
    stats uri /

listen primary
    bind 127.0.0.1:$PG_FRONT_PORT
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
CONF
    for n in "${PG_NODES[@]}"; do
      echo "    server pg$n 127.0.0.1:$(pg_port "$n") maxconn 1000 check port $(rest_port "$n")"
    done
  } >"$PG_DIR/haproxy.cfg"
}

pg_haproxy_start() {
  local pidfile="$RUN/haproxy-pg.pid"
  if [[ -s "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 0; fi
  pg_haproxy_render
  haproxy -D -f "$PG_DIR/haproxy.cfg" >>"$LOG/haproxy-pg.log" 2>&1 || fail_with_log "HAProxy (PostgreSQL) failed" "$LOG/haproxy-pg.log"
}

# The roles and schemas of provision_db.sh and every service's migrations, on the primary.
pg_database() {
  local primary
  primary="$(pg_primary)"
  if [[ "${CLUSTER_FRESH:-}" == 1 ]]; then
    PGPORT="$(pg_port "$primary")" runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d postgres \
      -c "DROP DATABASE IF EXISTS \"$DATABASE\" WITH (FORCE)"
  fi
  PGPORT="$(pg_port "$primary")" PROVISION_DATABASES="$DATABASE" PROVISION_VERIFY_PORT="$PG_FRONT_PORT" \
    "$HERE/provision_db.sh" >"$LOG/migrate.log" 2>&1 || fail_with_log "provisioning failed" "$LOG/migrate.log"
  HOLD_DATABASE_URL="$(dotenv_dsn HOLD_DATABASE_URL)" PAYMENT_DATABASE_URL="$(dotenv_dsn PAYMENT_DATABASE_URL)" \
    VOUCHER_DATABASE_URL="$(dotenv_dsn VOUCHER_DATABASE_URL)" NOTIFIER_DATABASE_URL="$(dotenv_dsn NOTIFIER_DATABASE_URL)" \
    "$REPO/.venv/bin/ticketing" migrate >>"$LOG/migrate.log" 2>&1 || fail_with_log "migrations failed" "$LOG/migrate.log"
}

pg_up() {
  local n
  mkdir -p "$PG_DIR" "$RUN" "$LOG"
  etcd_start
  for n in "${PG_NODES[@]}"; do patroni_start "$n"; done
  pg_haproxy_start
  wait_until 120 pg_settled || { pg_members >&2 || true; fail_with_log "the Patroni cluster did not settle in 120 s" "$LOG/patroni-1.log"; }
  pg_database
}

pg_node_kill() { # node: SIGKILL its PostgreSQL (the postmaster); its Patroni stays and rejoins it as a standby
  local pid
  pid="$(head -n 1 "$PG_DIR/data$1/postmaster.pid" 2>/dev/null)" || die "node $1 runs no PostgreSQL"
  kill -9 "$pid"
}

pg_down() {
  local n pid
  for n in "${PG_NODES[@]}"; do
    if pid="$(patroni_pid "$n")"; then kill -TERM "$pid"; fi
  done
  for n in "${PG_NODES[@]}"; do
    wait_until 60 eval '! patroni_pid '"$n"' >/dev/null' || { pid="$(patroni_pid "$n")" && kill -9 "$pid" || true; }
    rm -f "$RUN/patroni-$n.pid"
  done
  for pid in haproxy-pg etcd; do
    [[ -s "$RUN/$pid.pid" ]] && kill "$(cat "$RUN/$pid.pid")" 2>/dev/null || true
    rm -f "$RUN/$pid.pid"
  done
}

pg_status() {
  local rc=0 line
  up_line "etcd" "127.0.0.1:$ETCD_PORT" etcd_up || rc=3
  while read -r line; do printf '%-22s %s\n' "postgres-${line%% *}" "${line#* }"; done < <(pg_members || echo "pg? DOWN")
  up_line "postgres (primary)" "127.0.0.1:$PG_FRONT_PORT" pg_isready -q -h 127.0.0.1 -p "$PG_FRONT_PORT" -t 2 || rc=3
  return "$rc"
}
