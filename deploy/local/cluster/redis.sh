# The Redis Cluster of cluster mode: six redis-server processes, three masters with a replica each. Sourced by
# deploy/local/cluster.sh (its ports, paths and helpers).

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
