#!/usr/bin/env bash
# The compose stack, with podman-compose here and `docker compose` where a Docker engine answers.
#
#   stack.sh up      compose up -d, then wait until every one-shot exited 0 and every service is ready
#   stack.sh wait    the wait alone
#   stack.sh down    stop and remove the containers, the network and the volumes
#   stack.sh ps | logs [service]
#   stack.sh exec SERVICE COMMAND...   run a command in a running service's container (no TTY)
#
# Environment: COMPOSE_PROJECT_NAME (default ticketing), ENV_FILE (default <repo>/.env), the compose file's
# *_PORT and TICKETING_*_IMAGE variables, READY_TIMEOUT (seconds, default 300).
# Readiness, not sleeps: a service with a health check is ready when its check passes (podman runs no
# checks by itself here, so this script runs them: `podman healthcheck run`); one without is ready when
# it runs; a one-shot (migrations, topics) when it exited 0. A one-shot that failed fails at once.
# `up` starts three phases, each once the previous one is ready: the infrastructure (and the dev
# components), the one-shots, the services. Docker would order them by the file's depends_on conditions
# alone; podman-compose cannot here (podman 4.3 ignores health conditions, and its --requires graph fails
# on exited one-shots), so the phases are started with --no-deps on both engines.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
FILE="$REPO/deploy/compose/docker-compose.yml"
PROJECT="${COMPOSE_PROJECT_NAME:-ticketing}"
ENV_FILE="${ENV_FILE:-$REPO/.env}"
READY_TIMEOUT="${READY_TIMEOUT:-300}"
INFRA=" postgres redis kafka smtp-sink gateway-simulator "
ONE_SHOTS=" hold-migrate payment-migrate voucher-migrate notifier-migrate topics "

if docker info >/dev/null 2>&1; then
  ENGINE=docker
  COMPOSE=(docker compose)
else
  ENGINE=podman
  COMPOSE=("$(command -v podman-compose || echo "$REPO/.venv/bin/podman-compose")")
fi
COMPOSE+=(--env-file "$ENV_FILE" -p "$PROJECT" -f "$FILE")

log() { echo "stack: $*" >&2; }

containers() {
  "$ENGINE" ps -aq --filter "label=com.docker.compose.project=$PROJECT"
}

# One line per container: service status exit-code has-health-check
describe() {
  local ids
  mapfile -t ids < <(containers)
  ((${#ids[@]})) || return 0
  "$ENGINE" inspect --format \
    '{{index .Config.Labels "com.docker.compose.service"}} {{.State.Status}} {{.State.ExitCode}} {{.Name}} {{if .Config.Healthcheck}}check{{else}}none{{end}}' \
    "${ids[@]}"
}

healthy() { # container name
  if [[ "$ENGINE" == podman ]]; then
    podman healthcheck run "$1" >/dev/null 2>&1
  else
    [[ "$(docker inspect --format '{{.State.Health.Status}}' "$1")" == healthy ]]
  fi
}

# Every container's state, and the last lines of each long-running one that is no longer running (a dependency
# that died after its health check passed fails a one-shot that needed it).
stopped_logs() {
  local service status code name check
  describe >&2
  while read -r service status code name check; do
    [[ "$ONE_SHOTS" != *" $service "* && "$status" != running ]] || continue
    log "$service is $status (exit code $code), its last lines:"
    "$ENGINE" logs --tail 40 "${name#/}" >&2 || true
  done < <(describe)
}

# 0 all ready, 1 not yet, 2 a one-shot failed (printed). Arguments: the services to look at (all if none).
check_once() {
  local service status code name check waiting=0 seen=0 only=" $* "
  while read -r service status code name check; do
    [[ $# == 0 || "$only" == *" $service "* ]] || continue
    seen=1
    name="${name#/}"
    if [[ "$ONE_SHOTS" == *" $service "* ]]; then
      if [[ "$status" == exited && "$code" != 0 ]]; then
        log "one-shot $service exited with $code"
        "$ENGINE" logs --tail 40 "$name" >&2 || true
        stopped_logs
        return 2
      fi
      [[ "$status" == exited ]] || waiting=1
    elif [[ "$status" != running ]]; then
      waiting=1
    elif [[ "$check" == check ]] && ! healthy "$name"; then
      waiting=1
    fi
  done < <(describe)
  ((seen)) || return 1
  return "$waiting"
}

wait_ready() { # services...
  local deadline=$((SECONDS + READY_TIMEOUT)) rc
  while true; do
    rc=0
    check_once "$@" || rc=$?
    ((rc == 0)) && { log "ready after ${SECONDS}s: ${*:-all}"; return 0; }
    ((rc == 2)) && return 1
    if ((SECONDS > deadline)); then
      log "not ready after ${READY_TIMEOUT}s:"
      describe >&2
      return 1
    fi
    sleep 1
  done
}

up() {
  local service infra=() one_shots=() apps=()
  while read -r service; do
    if [[ "$INFRA" == *" $service "* ]]; then infra+=("$service")
    elif [[ "$ONE_SHOTS" == *" $service "* ]]; then one_shots+=("$service")
    else apps+=("$service"); fi
  done < <("${COMPOSE[@]}" config --services)
  start_phase "${infra[@]}"
  start_phase "${one_shots[@]}"
  start_phase "${apps[@]}"
}

start_phase() { # services...
  "${COMPOSE[@]}" up -d --no-deps "$@" >&2
  wait_ready "$@"
}

case "${1:-}" in
  up) up ;;
  wait) wait_ready ;;
  down) "${COMPOSE[@]}" down -v >&2 ;;
  ps) describe ;;
  logs) "${COMPOSE[@]}" logs "${@:2}" ;;
  exec) "${COMPOSE[@]}" exec -T "${@:2}" ;;
 *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
