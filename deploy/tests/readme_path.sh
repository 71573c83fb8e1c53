#!/usr/bin/env bash
# The README's path, as a newcomer takes it: `make up`, `make down` and `make up` again at once, `make demo`
# (at a small size, against the stack make up started, with its default timings and its rate limits as deployed),
# then a probe of the per-address hold limit with spoofed X-Forwarded-For headers (peer_address_limit.py),
# `make down`. Fails on the first step that fails, and when `make down` returns before every port it served
# is free.
#
#   deploy/tests/readme_path.sh        (make test-readme; make test runs it after lint, before the suite)
#
# It uses what `make up` uses: the dev database `ticketing`, the real consumer groups on the shared topics,
# ports 8001-8004, 8011, 8010, 1025 and 9101-9103. A stack that was up before is brought up again at the end.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO"
DEMO_ARGS=(--platform make-up --customers 200 --showtimes 2 --seats 20 --voucher-limit 5 --arrival-seconds 3
           --seconds 240 --plain)
PORTS=(8001 8011 8002 8003 8004 8010 1025 9101 9102 9103)

step() { echo; echo "readme-path: $*"; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stopped_for_good() {
  local port
  [[ ! -S var/run/supervisor.sock ]] || ! .venv/bin/supervisorctl -c deploy/local/supervisord.conf pid \
    >/dev/null 2>&1 || { echo "readme-path: supervisord still answers after make down" >&2; return 1; }
  for port in "${PORTS[@]}"; do
    if port_open "$port"; then
      echo "readme-path: port $port still served after make down returned" >&2
      return 1
    fi
  done
}

was_up=""
if [[ -S var/run/supervisor.sock ]] && .venv/bin/supervisorctl -c deploy/local/supervisord.conf pid >/dev/null 2>&1
then
  was_up=1
fi
started=$SECONDS

step "make up"
make --no-print-directory up
step "make down, then make up at once"
make --no-print-directory down
stopped_for_good
make --no-print-directory up
step "what make up prints for a service that is not ready (here, for a ready one): states, readiness, stacks"
why="$(deploy/local/apps.sh why hold-service 2>&1)"
for expected in "hold-api " "hold-worker " '"postgres":"ok"' "hold-api process " "(always_pong)" "Server.run"; do
  grep -qF -- "$expected" <<<"$why" || { echo "$why"; echo "readme-path: the report lacks '$expected'" >&2; exit 1; }
done
step "make demo ARGS='${DEMO_ARGS[*]}'"
rc=0
since="$(date '+%Y-%m-%d %H:%M:%S')"  # as the services' logs write time (local)
COLUMNS=160 make --no-print-directory demo ARGS="${DEMO_ARGS[*]}" || rc=$?
step "the money path first: its programs' CPU priority, checkouts at hold-service's door for the services"
.venv/bin/python deploy/tests/money_path.py "$since" || rc=$?
step "the per-address hold limit, by the peer's address"
.venv/bin/python deploy/tests/peer_address_limit.py || rc=$?
step "make down"
make --no-print-directory down
stopped_for_good
if [[ -n "$was_up" ]]; then
  step "make up (the stack was up before)"
  make --no-print-directory up >/dev/null
fi
if [[ $rc != 0 ]]; then
  echo "readme-path: make demo or the address limit's probe failed (exit status $rc)" >&2
  exit "$rc"
fi
echo "readme-path: passed in $((SECONDS - started)) s"
