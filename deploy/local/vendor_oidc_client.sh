#!/usr/bin/env bash
# The pages' OpenID Connect library, oidc-client-ts, from the npm registry: its browser bundle and its licence,
# copied beside the pages (they are committed; the pages have no build step). docs/sign-in.md.
#
#   vendor_oidc_client.sh [version]      (default: the version the pages use now)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PAGES="$REPO/services/hold-service/src/hold_service/entrypoints/api/pages"
VERSION="${1:-3.5.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "oidc-client-ts@$VERSION" >/dev/null && tar xzf oidc-client-ts-*.tgz)
cp "$work/package/dist/browser/oidc-client-ts.min.js" "$PAGES/oidc-client-ts.min.js"
cp "$work/package/LICENSE" "$PAGES/oidc-client-ts.LICENSE"
echo "vendor_oidc_client: oidc-client-ts $VERSION copied to $PAGES"
