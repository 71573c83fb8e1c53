#!/usr/bin/env bash
# The browser the page tests drive: Debian's chromium (Playwright runs it through executable_path; it
# downloads no browser of its own), chromium-driver (for WebDriver clients) and a font for screenshots; and
# axe-core (npm, pinned), the accessibility checker the page tests run inside every page, kept under var/axe.
# Idempotent: quick when they are there; installs chromium with apt (root) otherwise.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
AXE="axe-core@4.11.1"
AXE_DIR="$REPO/var/axe"

axe() {  # the package's one script, axe.min.js; fetched again only when the pin changes
  [[ -f "$AXE_DIR/axe.min.js" && "$(cat "$AXE_DIR/.package" 2>/dev/null)" == "$AXE" ]] && return 0
  command -v npm >/dev/null || { echo "browser: npm is needed for $AXE (Node.js)" >&2; exit 1; }
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$AXE" >/dev/null && tar xzf ./*.tgz package/axe.min.js)
  mkdir -p "$AXE_DIR"
  cp "$tmp/package/axe.min.js" "$AXE_DIR/axe.min.js"
  rm -rf "$tmp"
  echo "$AXE" > "$AXE_DIR/.package"
  echo "browser: $AXE -> var/axe/axe.min.js" >&2
}

axe
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if [[ $EUID -ne 0 ]]; then
  echo "browser: chromium is missing; run as root or: sudo apt-get install -y chromium chromium-driver" >&2
  exit 1
fi
echo "browser: installing chromium and chromium-driver (apt)" >&2
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-liberation >/dev/null
echo "browser: $(chromium --version)" >&2
