#!/usr/bin/env bash
# The official AsyncAPI 3.0.0 JSON Schema (npm package @asyncapi/specs, pinned), for tests/contract to check
# docs/events/asyncapi.yaml against. Cached under var/contract; fetched again only when the pin changes.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PACKAGE="@asyncapi/specs@6.11.1"
DIR="$REPO/var/contract"
TARGET="$DIR/asyncapi-3.0.0.json"
MARKER="$DIR/.package"
[[ -f "$TARGET" && "$(cat "$MARKER" 2>/dev/null)" == "$PACKAGE" ]] && exit 0
command -v npm >/dev/null || { echo "asyncapi_schema: npm is needed (Node.js)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null && tar xzf ./*.tgz package/schemas/3.0.0-without-\$id.json)
mkdir -p "$DIR"
cp "$tmp/package/schemas/3.0.0-without-\$id.json" "$TARGET"
echo "$PACKAGE" > "$MARKER"
echo "asyncapi_schema: $PACKAGE -> ${TARGET#"$REPO"/}"
