#!/usr/bin/env bash
# Writes <repo>/.env with fresh random secrets, only if it does not exist yet.
# Never prints a secret. The file is chmod 600 and git-ignored.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
ENV_FILE="$REPO/.env"

hex_secret() { openssl rand -hex 32; }

# Ed25519 private keys are a 32-byte seed; stored base64 (44 characters, one line).
ed25519_seed() { openssl rand -base64 32; }

db_url() { # role password (hex, so no URL escaping needed)
  echo "postgresql://$1:$2@127.0.0.1:5432/ticketing"
}

render_env() {
  # Every secret is taken into a variable first: a failing $(...) inside the heredoc would go unnoticed.
  local jwt webhook stripe_key hold_pw payment_pw voucher_pw notifier_pw platform_pw qr_key
  jwt="$(hex_secret)"
  webhook="whsec_$(hex_secret)"
  stripe_key="sk_test_$(hex_secret)"
  qr_key="$(ed25519_seed)"
  hold_pw="$(hex_secret)"
  payment_pw="$(hex_secret)"
  voucher_pw="$(hex_secret)"
  notifier_pw="$(hex_secret)"
  platform_pw="$(hex_secret)"
  cat <<ENV
# Written by deploy/local/write_env.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ). Local secrets: never commit.
# dev: the only mode that runs with the code's default secrets (anything else refuses them).
APP_ENV=dev
JWT_SECRET=$jwt
# Stripe's webhook signing secret and the merchant's secret key (here the simulator's, which refuses calls
# without the key); a real Stripe account's test-mode values go here instead (docs/payments.md).
STRIPE_WEBHOOK_SECRET=$webhook
STRIPE_API_KEY=$stripe_key
HOLD_DB_PASSWORD=$hold_pw
PAYMENT_DB_PASSWORD=$payment_pw
VOUCHER_DB_PASSWORD=$voucher_pw
NOTIFIER_DB_PASSWORD=$notifier_pw
HOLD_DATABASE_URL=$(db_url hold_service "$hold_pw")
PAYMENT_DATABASE_URL=$(db_url payment_service "$payment_pw")
VOUCHER_DATABASE_URL=$(db_url voucher_service "$voucher_pw")
NOTIFIER_DATABASE_URL=$(db_url notifier "$notifier_pw")
# The shared library's own integration tests (outbox, relay, consumer) use this role, test database only.
PLATFORM_TEST_DB_PASSWORD=$platform_pw
PLATFORM_TEST_DATABASE_URL=$(db_url platform_test "$platform_pw" | sed 's#/ticketing$#/ticketing_test#')
KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092
REDIS_URL=redis://127.0.0.1:6379/0
QR_SIGNING_KEY=$qr_key
# The notifier reads a buyer's address from hold-service with this key (docs/sign-in.md).
CONTACTS_API_KEY=$(hex_secret)
ENV
}

add_missing_keys() {
  # An .env from an older checkout keeps its secrets; keys added since are appended with fresh values.
  local added=0 line
  while IFS= read -r line; do
    [[ "$line" =~ ^([A-Z_]+)= ]] || continue
    grep -q "^${BASH_REMATCH[1]}=" "$ENV_FILE" && continue
    echo "$line" >>"$ENV_FILE"
    added=$((added + 1))
  done < <(render_env)
  echo "write_env: $ENV_FILE exists, $added missing key(s) added"
}

main() {
  if [[ -e "$ENV_FILE" ]]; then
    add_missing_keys
    return 0
  fi
  local tmp
  tmp="$(umask 077 && mktemp "$REPO/.env.XXXXXX")"
  render_env >"$tmp"
  chmod 600 "$tmp"
  mv "$tmp" "$ENV_FILE"
  echo "write_env: wrote $ENV_FILE with fresh secrets"
}

main "$@"
