#!/usr/bin/env bash
# A Keycloak for development and the sign-in tests: fetched from Maven Central (org.keycloak:keycloak-quarkus-dist)
# by Maven, unpacked under var/idp, started in dev mode on IDP_PORT (8180) with the realm of
# deploy/local/idp/*-realm.json imported at start (ticketing; elsewhere, a second realm the tests use) (an in-memory H2 database: every start is the realm
# file again, nothing kept).
#
#   idp.sh up | down | status | fetch
#
# Keycloak 26 needs Java 21 or newer: JAVA_HOME if set, else the newest JDK under /usr/lib/jvm that is 21+.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/deploy/local"
VAR="$REPO/var"
IDP_DIR="$VAR/idp"
RUN_DIR="$VAR/run"
LOG_DIR="$VAR/log"
IDP_PID="$RUN_DIR/idp.pid"
IDP_LOG="$LOG_DIR/idp.log"
KEYCLOAK_VERSION="${KEYCLOAK_VERSION:-26.4.7}"
KEYCLOAK_HOME="$IDP_DIR/keycloak-$KEYCLOAK_VERSION"
IDP_PORT="${IDP_PORT:-8180}"
IDP_MANAGEMENT_PORT="${IDP_MANAGEMENT_PORT:-9190}"
IDP_READY_TIMEOUT="${IDP_READY_TIMEOUT:-180}"

NAME=idp
source "$HERE/common.sh"

java_home() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]] && java_major "$JAVA_HOME/bin/java" >/dev/null; then
    echo "$JAVA_HOME"; return 0
  fi
  local dir best="" best_major=0 major
  for dir in /usr/lib/jvm/*/; do
    [[ -x "$dir/bin/java" ]] || continue
    major="$(java_major "$dir/bin/java")" || continue
    if ((major > best_major)); then best="${dir%/}"; best_major=$major; fi
  done
  if [[ -z "$best" ]]; then
    log "no Java 21+ under /usr/lib/jvm: installing Debian's openjdk-21-jre-headless"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      openjdk-21-jre-headless >&2 || die "Keycloak $KEYCLOAK_VERSION needs Java 21 or newer; set JAVA_HOME"
    best=/usr/lib/jvm/java-21-openjdk-amd64
  fi
  echo "$best"
}

java_major() { # java-binary: prints its major version when it is 21 or newer
  local version
  version="$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  [[ "$version" =~ ^[0-9]+$ ]] && ((version >= 21)) && echo "$version"
}

fetch() {
  [[ -x "$KEYCLOAK_HOME/bin/kc.sh" ]] && return 0
  command -v mvn >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q --no-install-recommends maven; }
  mkdir -p "$IDP_DIR" "$LOG_DIR"
  log "fetching org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION from Maven Central"
  mvn -q -B dependency:copy -Dartifact="org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" \
    -DoutputDirectory="$IDP_DIR" >>"$LOG_DIR/maven.log" 2>&1 \
    || fail_with_log "maven could not fetch keycloak" "$LOG_DIR/maven.log"
  (cd "$IDP_DIR" && python3 -m zipfile -e "keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip" . \
    && rm "keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip")
  chmod +x "$KEYCLOAK_HOME"/bin/*.sh
}

running() { [[ -f "$IDP_PID" ]] && kill -0 "$(cat "$IDP_PID")" 2>/dev/null; }

ready() { curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$IDP_PORT/realms/ticketing/.well-known/openid-configuration"; }

ready_or_gone() { ready || ! running; }

up() {
  fetch
  mkdir -p "$RUN_DIR" "$KEYCLOAK_HOME/data/import"
  if running && ready; then log "already running on :$IDP_PORT"; return 0; fi
  cp "$HERE"/idp/*-realm.json "$KEYCLOAK_HOME/data/import/"
  local jhome; jhome="$(java_home)"
  log "starting Keycloak $KEYCLOAK_VERSION on :$IDP_PORT (Java: $jhome)"
  JAVA_HOME="$jhome" KC_BOOTSTRAP_ADMIN_USERNAME=admin KC_BOOTSTRAP_ADMIN_PASSWORD=admin \
    JAVA_OPTS_KC_HEAP="-Xms64m -Xmx512m" \
    setsid "$KEYCLOAK_HOME/bin/kc.sh" start-dev --import-realm --http-port="$IDP_PORT" \
    --http-management-port="$IDP_MANAGEMENT_PORT" --hostname-strict=false --db=dev-mem >"$IDP_LOG" 2>&1 &
  echo $! >"$IDP_PID"
  wait_until "$IDP_READY_TIMEOUT" ready_or_gone && ready || fail_with_log "Keycloak did not answer within ${IDP_READY_TIMEOUT}s" "$IDP_LOG"
  log "ready: issuer http://127.0.0.1:$IDP_PORT/realms/ticketing"
}

down() {
  running || { rm -f "$IDP_PID"; log "not running"; return 0; }
  local pid; pid="$(cat "$IDP_PID")"
  kill -- "-$pid" 2>/dev/null || kill "$pid"
  wait_until 30 bash -c "! kill -0 $pid 2>/dev/null" || kill -9 -- "-$pid" 2>/dev/null || true
  rm -f "$IDP_PID"
  log "stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  fetch) fetch ;;
  status) if running && ready; then log "running on :$IDP_PORT"; else log "not running"; exit 1; fi ;;
  *) echo "usage: $0 up|down|status|fetch" >&2; exit 2 ;;
esac
