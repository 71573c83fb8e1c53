#!/usr/bin/env bash
# First start: initdb, then provision the databases and roles while the server listens on loopback only;
# every start: run the server on all interfaces with scram logins. Runs as the postgres user.
set -euo pipefail
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
MAX_CONNECTIONS="${POSTGRES_MAX_CONNECTIONS:-300}"

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
  initdb -D "$PGDATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --no-instructions >/dev/null
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=127.0.0.1 -c unix_socket_directories=/var/run/postgresql" start >/dev/null
  PROVISION_FROM_ENV=1 /usr/local/lib/ticketing/provision_db.sh
  pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c max_connections="$MAX_CONNECTIONS" \
  -c unix_socket_directories=/var/run/postgresql "$@"
