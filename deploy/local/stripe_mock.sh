#!/usr/bin/env bash
# stripe-mock (Stripe's own mock of its API, pinned), for the payment adapter's contract test: it answers
# each request from Stripe's OpenAPI description and refuses any parameter Stripe would refuse. Built from
# source with `go install` (the Go module proxy) into var/contract/bin; built again only when the pin changes.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
VERSION="v0.203.0"
DIR="$REPO/var/contract/bin"
TARGET="$DIR/stripe-mock"
MARKER="$DIR/.stripe-mock"
[[ -x "$TARGET" && "$(cat "$MARKER" 2>/dev/null)" == "$VERSION" ]] && exit 0
command -v go >/dev/null || { echo "stripe_mock: Go is needed (go install)" >&2; exit 1; }
mkdir -p "$DIR"
GOBIN="$DIR" go install "github.com/stripe/stripe-mock@$VERSION"
echo "$VERSION" > "$MARKER"
echo "stripe_mock: stripe-mock $VERSION -> ${TARGET#"$REPO"/}"
