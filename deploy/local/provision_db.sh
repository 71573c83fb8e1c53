#!/usr/bin/env bash
# Creates the databases, one login role and one schema per service, idempotently.
#
#   databases: ticketing, ticketing_test (PROVISION_DATABASES="a b" names others)
#   role -> schema: hold_service -> hold, payment_service -> payment,
#                   voucher_service -> voucher, notifier -> notifier
#
# Each schema is owned by its role and nothing is granted on it to anyone else, so a service can
# use only its own schema. Passwords come from <repo>/.env (written by write_env.sh if missing)
# and are re-applied on every run, so a regenerated .env simply takes effect.
# Runs SQL as the postgres OS user; the server must be up on 127.0.0.1:5432.
#
# Container mode (PROVISION_FROM_ENV=1, the postgres image's first start): passwords come from the
# environment, a role whose password variable is unset is skipped, SQL runs as the current (postgres)
# user over the local socket, and logins are verified on PROVISION_VERIFY_HOST/PORT.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
ENV_FILE="$REPO/.env"
FROM_ENV="${PROVISION_FROM_ENV:-}"
PG_HOST="${PROVISION_VERIFY_HOST:-127.0.0.1}"
PG_PORT="${PROVISION_VERIFY_PORT:-5432}"
read -r -a DATABASES <<<"${PROVISION_DATABASES:-ticketing ticketing_test}"
# role:schema:password variable in .env
SERVICES=(
  "hold_service:hold:HOLD_DB_PASSWORD"
  "payment_service:payment:PAYMENT_DB_PASSWORD"
  "voucher_service:voucher:VOUCHER_DB_PASSWORD"
  "notifier:notifier:NOTIFIER_DB_PASSWORD"
  "platform_test:platform_test:PLATFORM_TEST_DB_PASSWORD"
)

log() { echo "provision_db: $*"; }
die() { echo "provision_db: ERROR: $*" >&2; exit 1; }

# SQL goes through stdin, never argv, so passwords do not show up in `ps`.
# client_min_messages hides the "already exists, skipping" notices of repeated runs.
psql_as_postgres() { # database
  local as_postgres=(runuser -u postgres --)
  [[ "$(id -un)" == postgres ]] && as_postgres=()
  { echo 'SET client_min_messages = warning;'; cat; } \
    | "${as_postgres[@]}" psql -X -q -v ON_ERROR_STOP=1 -d "$1" -f -
}

env_value() { # KEY -> value of the last KEY=... line in .env (or of $KEY in container mode), quotes removed
  local value
  if [[ -n "$FROM_ENV" ]]; then
    echo "${!1:-}"
    return
  fi
  value="$(sed -n "s/^[[:space:]]*$1=//p" "$ENV_FILE" | tail -n 1)"
  value="${value%\"}"; value="${value#\"}"; value="${value%\'}"; value="${value#\'}"
  [[ -n "$value" ]] || die "$1 is missing or empty in $ENV_FILE"
  echo "$value"
}

sql_literal() { # text -> 'text' with single quotes doubled
  echo "'${1//\'/\'\'}'"
}

ensure_env_file() {
  "$REPO/deploy/local/write_env.sh"
}

ensure_database() { # name
  psql_as_postgres postgres <<SQL
SELECT 'CREATE DATABASE $1' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$1')
\gexec
REVOKE ALL ON DATABASE $1 FROM PUBLIC;
SQL
}

ensure_role() { # role password
  psql_as_postgres postgres <<SQL
SELECT 'CREATE ROLE $1 LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$1')
\gexec
ALTER ROLE $1 LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
  PASSWORD $(sql_literal "$2");
SQL
}

ensure_schema() { # database role schema
  psql_as_postgres "$1" <<SQL
REVOKE ALL ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA IF NOT EXISTS $3 AUTHORIZATION $2;
ALTER SCHEMA $3 OWNER TO $2;
REVOKE ALL ON SCHEMA $3 FROM PUBLIC;
ALTER ROLE $2 IN DATABASE $1 SET search_path = $3;
GRANT CONNECT, TEMPORARY ON DATABASE $1 TO $2;
SQL
}

# Proves the path the services use: scram password login over TCP (Debian's pg_hba allows it).
verify_tcp_login() { # database role password
  PGPASSWORD="$3" psql -X -q -w -h "$PG_HOST" -p "$PG_PORT" -U "$2" -d "$1" -tA \
    -c 'SELECT current_schema()' >/dev/null \
    || die "role $2 cannot log in to $1 over TCP $PG_HOST:$PG_PORT with its password"
}

provision_service() { # role:schema:PASSWORD_VAR
  local role schema var password db
  IFS=: read -r role schema var <<<"$1"
  password="$(env_value "$var")"
  if [[ -z "$password" ]]; then
    log "$var is not set: role $role skipped"
    return
  fi
  ensure_role "$role" "$password"
  for db in "${DATABASES[@]}"; do
    ensure_schema "$db" "$role" "$schema"
    verify_tcp_login "$db" "$role" "$password"
  done
}

main() {
  [[ -n "$FROM_ENV" ]] || ensure_env_file
  local db service
  for db in "${DATABASES[@]}"; do ensure_database "$db"; done
  for service in "${SERVICES[@]}"; do provision_service "$service"; done
  log "databases ${DATABASES[*]} ready, roles and schemas provisioned, TCP login verified"
}

main "$@"
