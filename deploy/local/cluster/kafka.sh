# The three Kafka brokers of cluster mode (KRaft: each a broker and one of three controller voters). Sourced by
# deploy/local/cluster.sh (its ports, paths and helpers).

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
