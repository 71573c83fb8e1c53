#!/usr/bin/env bash
# Databases made as copies of a migrated one, the way procrastinate's tests get theirs:
#
#   clone_db.sh TEMPLATE DB...   drop each DB, create it with CREATE DATABASE ... TEMPLATE (the schemas, the
#                                tables, their rows and the migration log as they are in TEMPLATE), then give
#                                the service roles on it what provision_db.sh gives them on any database
#
# `pytest -n` makes one per worker from the test database before the workers start (ticketing_testing.workers).
# PostgreSQL copies a database only while nobody is connected to it: TEMPLATE must be idle meanwhile.
# Runs SQL as the postgres OS user, as provision_db.sh does.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
(($# >= 2)) || { echo "usage: clone_db.sh TEMPLATE DB..." >&2; exit 2; }
TEMPLATE=$1
shift

as_postgres=(runuser -u postgres --)
[[ "$(id -un)" == postgres ]] && as_postgres=()
for db in "$@"; do
  [[ "$db" != "$TEMPLATE" ]] || { echo "clone_db: $db is the template itself" >&2; exit 2; }
  # One statement per -c: CREATE and DROP DATABASE cannot run inside a transaction block.
  "${as_postgres[@]}" psql -X -q -v ON_ERROR_STOP=1 -d postgres \
    -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" -c "CREATE DATABASE \"$db\" TEMPLATE \"$TEMPLATE\""
done
PROVISION_DATABASES="$*" "$REPO/deploy/local/provision_db.sh" >/dev/null
echo "clone_db: $* copied from $TEMPLATE"
