#!/usr/bin/env bash
# The Python toolchain: uv (pinned) and the workspace venv from uv.lock. Idempotent and quick when done.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
UV_VERSION=0.13.8
TOOLS="$REPO/var/tools"

uv_bin() {
  if command -v uv >/dev/null 2>&1 && [[ "$(uv --version | cut -d' ' -f2)" == "$UV_VERSION" ]]; then
    command -v uv
    return
  fi
  if [[ ! -x "$TOOLS/bin/uv" ]]; then
    echo "bootstrap: installing uv $UV_VERSION into var/tools" >&2
    python3 -m venv "$TOOLS" >&2
    "$TOOLS/bin/pip" install -q "uv==$UV_VERSION" >&2
  fi
  echo "$TOOLS/bin/uv"
}

UV="$(uv_bin)"
cd "$REPO"
"$UV" sync --frozen --quiet
echo "bootstrap: .venv ready ($("$REPO/.venv/bin/python" --version))"
