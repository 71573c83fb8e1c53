#!/usr/bin/env bash
# `make test` runs the deployment tests beside the main suite:
#
#   background.sh start   build the tools (helm) and the images side by side, then run pytest deploy/tests,
#                         then the sign-in tests against Keycloak (pytest -m idp; Keycloak fetched and started
#                         by deploy/local/idp.sh while the images build), then the cluster fault run
#                         (deploy/tests/test_cluster_faults.py), all detached; output in var/deploy/test.log
#   background.sh wait    wait for it, print its output, exit with its status
#
# The two suites share the machine; the deployment tests are mostly image builds, downloads and waits. The
# cluster fault run comes after them, so that only one of the two shares the cores with the main suite.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
DIR="$REPO/var/deploy"
LOG="$DIR/test.log"
RC="$DIR/test.rc"
WAIT_TIMEOUT="${DEPLOY_TEST_TIMEOUT:-2400}"

start() {
  mkdir -p "$DIR"
  rm -f "$RC"
  # setsid + nohup: the job outlives the make recipe line that started it.
  setsid nohup bash -c '
    cd "$1"; started=$SECONDS
    # helm builds (cold: minutes) while the images build and the tests that need no helm run first.
    deploy/helm/tools.sh helm >/dev/null &
    tools=$!
    # Keycloak starts meanwhile (a JVM: a minute of CPU), for the sign-in tests after the deployment tests.
    deploy/local/idp.sh up >var/deploy/idp.log 2>&1 &
    idp=$!
    rc=0
    deploy/images/build.sh || rc=$?
    echo "deploy-tests: images ready after $((SECONDS - started)) s"
    if [[ $rc == 0 ]]; then
      .venv/bin/pytest -p no:cacheprovider --timeout 1800 -q -rA deploy/tests/test_images.py deploy/tests/test_compose.py \
        deploy/tests/test_testcontainers.py deploy/tests/test_env_contract.py deploy/tests/test_helm.py \
        deploy/tests/test_helm_trust.py deploy/tests/test_helm_commands.py deploy/tests/test_helm_options.py \
        deploy/tests/test_helm_routes.py deploy/tests/test_helm_database.py deploy/tests/test_cluster_balancer.py \
        deploy/tests/test_balancer_retries.py deploy/tests/test_balancer_hold_share.py || rc=$?
    fi
    wait "$tools" || true
    echo "deploy-tests: finished in $((SECONDS - started)) s"
    started=$SECONDS
    # The sign-in tests run beside the cluster fault run. A test database of their own: the main suite copies the
    # databases of its workers from the shared one, which PostgreSQL does only while nobody is connected to it.
    idp_up=0; wait "$idp" || idp_up=$?
    (
      started=$SECONDS
      if [[ $idp_up == 0 ]] && deploy/local/migrate.sh --fresh ticketing_test_idp >var/deploy/idp-db.log 2>&1; then
        # On the shared PostgreSQL server, which the serial phase of the main suite restarts (R12): the lock.
        mkdir -p var/run
        TICKETING_TEST_DATABASE=ticketing_test_idp flock var/run/postgres-faults.lock \
          .venv/bin/pytest -p no:cacheprovider --timeout 600 -q -rA -m idp tests/e2e/browser/test_sign_in.py \
          >var/deploy/idp-tests.log 2>&1 || idp_rc=$?
      else
        cat var/deploy/idp.log var/deploy/idp-db.log 2>/dev/null; idp_rc=1
      fi
      deploy/local/idp.sh down >/dev/null 2>&1 || true
      echo "sign-in-tests: finished in $((SECONDS - started)) s"
      exit "${idp_rc:-0}"
    ) &
    signin=$!
    # Cluster mode has a PostgreSQL of its own (Patroni), so the restart of the shared server by the main suite
    # (R12) does not touch it: the two run side by side.
    .venv/bin/pytest -p no:cacheprovider --timeout 1500 -q -rA -s deploy/tests/test_cluster_faults.py || rc=$?
    echo "cluster-faults: finished in $((SECONDS - started)) s"
    wait "$signin" || rc=1
    echo "=============================== sign-in tests ==============================="
    cat var/deploy/idp-tests.log 2>/dev/null || true
    echo "$rc" >"$2"
  ' _ "$REPO" "$RC" >"$LOG" 2>&1 </dev/null &
  echo "deploy-tests: started in the background (log: var/deploy/test.log)"
}

wait_done() {
  local deadline=$((SECONDS + WAIT_TIMEOUT))
  until [[ -s "$RC" ]]; do
    if ((SECONDS > deadline)); then
      echo "deploy-tests: still running after ${WAIT_TIMEOUT}s" >&2
      cat "$LOG"
      return 1
    fi
    sleep 2
  done
  echo "=============================== deployment tests ==============================="
  cat "$LOG"
  return "$(cat "$RC")"
}

case "${1:-}" in
  start) start ;;
  wait) wait_done ;;
  *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
