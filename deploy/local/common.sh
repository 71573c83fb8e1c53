# Helpers of the native infrastructure scripts (infra.sh, cluster.sh), sourced: each sets NAME first.

log() { echo "$NAME: $*"; }
die() { echo "$NAME: ERROR: $*" >&2; exit 1; }

fail_with_log() { # message logfile
  echo "$NAME: ERROR: $1" >&2
  if [[ -f "$2" ]]; then
    # Kafka's shutdown chatter can push the cause out of the tail, so show the errors first.
    echo "----- last errors in $2 -----" >&2
    grep -E 'ERROR|FATAL|Exception|Address already' "$2" | tail -n 15 >&2 || true
    echo "----- last 60 lines of $2 -----" >&2
    tail -n 60 "$2" >&2
  fi
  exit 1
}

wait_until() { # timeout_seconds command...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
