#!/usr/bin/env bash
# Apply every service's migrations (yoyo-migrations, plain SQL) and its schema file, with the service's own role.
#   migrate.sh [database]           (default: the database named in .env's DSNs, i.e. ticketing)
#   migrate.sh --fresh database     drop the database first, provision it again, then migrate: a test database
#                                   starts from the migrations as they are now, never from a state left by a
#                                   migration file that was edited after it was applied there
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO"
set -a; source .env; set +a
FRESH=""
if [[ "${1:-}" == --fresh ]]; then FRESH=1; shift; fi
DB="${1:-}"
if [[ -n "$FRESH" ]]; then
  [[ -n "$DB" ]] || { echo "migrate: --fresh needs a database name (never the dev database)" >&2; exit 2; }
  runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)"
  PROVISION_DATABASES="$DB" deploy/local/provision_db.sh
fi
# Every service: the shared tables, its own migrations, then its sql/schema.sql (ticketing.migrations), with its
# own role; the same code the chart's migrate Job and the tests run.
.venv/bin/ticketing migrate ${DB:+--database "$DB"}
