"""Every service process starts from bytecode compiled at install (deploy/local/bootstrap.sh), never compiling
its libraries from source: on a busy machine a uvicorn worker importing from source was starved for minutes
and killed as hung, and the README's `make up` gave up on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# What the long-running processes import: each API's app and each worker.
ENTRYPOINTS = [f"{service}.entrypoints.{role}" for service in ("hold_service", "payment_service", "voucher_service")
               for role in ("api.app", "worker")] + ["notifier.entrypoints.worker", "gateway_simulator",
                                                                     "smtp_sink.server"]

# Run in a process of its own, as the services run (PYTHONDONTWRITEBYTECODE: nothing it imports may write a
# cache file and so hide one the install did not write): the installed modules it loaded whose cached bytecode
# is missing or does not match the source (a timestamp-based .pyc names its source's mtime and size).
PROBE = """
import importlib, importlib.util, json, os, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
stale = []
for module in list(sys.modules.values()):
    source, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
    if not source or not source.endswith(".py") or "site-packages" not in source or not cached:
        continue
    try:
        with open(cached, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        stale.append(source)
        continue
    st = os.stat(source)
    timestamped = int.from_bytes(head[4:8], "little") == 0
    if head[:4] != importlib.util.MAGIC_NUMBER or timestamped and (
            int.from_bytes(head[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(head[12:16], "little") != st.st_size & 0xFFFFFFFF):
        stale.append(source)
print(json.dumps({"loaded": len(sys.modules), "stale": sorted(stale)}))
"""


def test_the_services_import_their_libraries_from_compiled_bytecode() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE, *ENTRYPOINTS], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["loaded"] > 500, result  # the probe did import the services
    assert result["stale"] == [], (f"{len(result['stale'])} modules would be compiled from source at every start "
                                   f"(make venv compiles them): {result['stale'][:10]}")
