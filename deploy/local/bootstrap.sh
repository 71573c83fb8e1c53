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
# Bytecode compiled once here, as the container image does (UV_COMPILE_BYTECODE): a Python process otherwise
# compiles every module it imports from source, each time it starts when PYTHONDONTWRITEBYTECODE is set (as on
# our build machines), else at its first start beside the others. That is 1.5-2 s of CPU per process even on an
# idle machine (an API's import and app: 2.9 s of CPU from source, 1.2 s from bytecode), and on a busy one the
# uvicorn workers of `make up` were starved for minutes while importing (one printed nothing for 110 s and was
# killed as hung by uvicorn's supervisor). uv compiles only what it has not compiled yet; compileall likewise
# for the workspace's own code (its __pycache__ folders are ignored by git; a file edited later is compiled
# again in memory when it is imported, as Python checks each cached file against its source).
"$UV" sync --frozen --quiet --compile-bytecode
"$REPO/.venv/bin/python" -m compileall -q -j 0 -x '/(\.venv|var|node_modules)/' \
  "$REPO/shared" "$REPO/services" "$REPO/testing" "$REPO/tests" "$REPO/deploy" >/dev/null
echo "bootstrap: .venv ready ($("$REPO/.venv/bin/python" --version))"
