#!/usr/bin/env bash
# The platform's own processes under supervisord.
#   apps.sh up | down | status | logs [program] | why <service> (what up prints for a service not ready)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO"
CONF=deploy/local/supervisord.conf
CTL=(.venv/bin/supervisorctl -c "$CONF")
READY_TIMEOUT=90

# name | URL waited on | what it is
ENDPOINTS=(
  "hold-service|http://127.0.0.1:8001/readyz|seat holds, seat map (API + worker: relay, consumer, sweeper)"
  "hold-internal|http://127.0.0.1:8011/readyz|the other services' door to it (checkout's hold reads, extensions)"
  "payment-service|http://127.0.0.1:8002/readyz|checkout, callbacks, refunds (API + worker: relay, consumer, reconciliation)"
  "voucher-service|http://127.0.0.1:8003/readyz|vouchers, flash-sale gate (API + worker: consumers, expiry, reconciliation)"
  "notifier|http://127.0.0.1:8004/readyz|e-mail with QR tickets, loyalty points (faust worker)"
  "gateway-simulator|http://127.0.0.1:8010/healthz|Stripe-shaped dev payment provider, hosted pay page at /pay/{sessionId}"
)

supervisord_running() { "${CTL[@]}" pid >/dev/null 2>&1; }

# Every port a program of supervisord.conf listens on (APIs, SMTP sink, workers' /metrics).
PORTS=(8001 8011 8002 8003 8004 8010 1025 9101 9102 9103)
STOP_TIMEOUT=60

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

# `supervisorctl shutdown` only asks: supervisord then stops each program and exits on its own time. down
# returns once supervisord is gone and no port is still served, so that an `up` right after it can bind them.
down() {
  if ! supervisord_running; then
    echo "apps: not running"
    return 0
  fi
  local pid deadline=$((SECONDS + STOP_TIMEOUT)) port
  pid="$(cat var/run/supervisord.pid 2>/dev/null || true)"
  "${CTL[@]}" shutdown >/dev/null
  while pid_alive "$pid"; do
    ((SECONDS < deadline)) || { echo "apps: supervisord ($pid) still running after ${STOP_TIMEOUT}s" >&2; return 1; }
    sleep 0.2
  done
  for port in "${PORTS[@]}"; do
    while port_open "$port"; do
      ((SECONDS < deadline)) || { echo "apps: port $port still served after ${STOP_TIMEOUT}s" >&2; return 1; }
      sleep 0.2
    done
  done
  echo "apps: stopped"
}

up() {
  mkdir -p var/log var/run var/mail
  # prometheus_client's multiprocess files of the 2-worker APIs start empty with every start.
  rm -rf var/run/prometheus && mkdir -p var/run/prometheus/hold-api var/run/prometheus/payment-api \
    var/run/prometheus/voucher-api
  if supervisord_running; then
    "${CTL[@]}" update >/dev/null
    "${CTL[@]}" start all >/dev/null || true
  else
    local port
    for port in "${PORTS[@]}"; do
      if port_open "$port"; then
        echo "apps: port $port is already in use by another program (a make up of another checkout?)" >&2
        return 1
      fi
    done
    .venv/bin/supervisord -c "$CONF"
  fi
  local failed=0
  for row in "${ENDPOINTS[@]}"; do
    IFS='|' read -r name url _ <<<"$row"
    if ! wait_ready "$url"; then
      echo "apps: $name not ready at $url after ${READY_TIMEOUT}s" >&2
      why_not_ready "$name" "$url" >&2
      failed=1
    fi
  done
  table
  return "$failed"
}

# What a service that did not become ready is doing: its programs' states, what its readiness check answers
# (which dependency it cannot reach), the Python stack of every process of those programs (py-spy: a worker
# stuck importing, waiting on a dependency or in its lifespan shows where), then its last log lines.
why_not_ready() {
  local name="$1" url="$2" prefix="${1%%-*}" program pid
  echo "apps: its programs (supervisord):"
  "${CTL[@]}" status | grep "^$prefix-" | sed 's/^/  /' || true
  echo "apps: $url answers: $(curl -s --max-time 2 -w ' (HTTP %{http_code})' "$url" 2>&1 || true)"
  for program in $("${CTL[@]}" status | awk -v p="^$prefix-" '$1 ~ p {print $1}'); do
    pid="$("${CTL[@]}" pid "$program" 2>/dev/null || true)"
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] || continue
    for p in "$pid" $(pgrep -P "$pid" || true); do
      echo "apps: $program process $p ($(ps -o etime=,stat= -p "$p" 2>/dev/null | xargs)), its threads' stacks:"
      timeout 20 .venv/bin/py-spy dump --pid "$p" 2>&1 | sed 's/^/  /' || echo "  (py-spy could not read it)"
    done
  done
  echo "apps: the last log lines of $name:"
  tail -n 30 var/log/"$prefix"-*.log || true
}

wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  until curl -fs -o /dev/null --max-time 2 "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

table() {
  echo
  printf '%-18s %-32s %s\n' "component" "address" "what"
  for row in "${ENDPOINTS[@]}"; do
    IFS='|' read -r name url what <<<"$row"
    printf '%-18s %-32s %s\n' "$name" "${url%/*}" "$what"
  done
  printf '%-18s %-32s %s\n' "smtp-sink" "smtp://127.0.0.1:1025" "dev mail sink, one .eml per message in var/mail/"
  printf '%-18s %-32s %s\n' "kafka" "127.0.0.1:9092" "topics booking-events, voucher-reserved (+ .DLQ)"
  printf '%-18s %-32s %s\n' "postgres" "127.0.0.1:5432" "database ticketing, one schema + role per service"
  printf '%-18s %-32s %s\n' "redis" "127.0.0.1:6379" "gates, seat-map cache, rate limits"
  echo
  echo "API docs: http://127.0.0.1:8001/docs (and 8002, 8003). A token: .venv/bin/ticketing token --sub 7 --role customer"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  why) why_not_ready "${2:?which service: hold-service, payment-service, ...}" \
         "$(for row in "${ENDPOINTS[@]}"; do [[ "${row%%|*}" == "$2" ]] && cut -d'|' -f2 <<<"$row"; done)" ;;
  status) if supervisord_running; then "${CTL[@]}" status || true; else echo "apps: not running"; fi ;;
  logs) if [[ -n "${2:-}" ]]; then tail -n 100 -f "var/log/$2.log"; else tail -n 20 -f var/log/*-*.log; fi ;;
  *) echo "usage: $0 up|down|status|logs [program]|why <service>" >&2; exit 2 ;;
esac
