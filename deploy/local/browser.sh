#!/usr/bin/env bash
# The browser the page tests drive: Debian's chromium (Playwright runs it through executable_path; it
# downloads no browser of its own), chromium-driver (for WebDriver clients) and a font for screenshots.
# Idempotent: quick when they are there; installs them with apt (root) otherwise.
set -euo pipefail
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
