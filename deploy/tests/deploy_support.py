"""Helpers of the deployment tests (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dotenv import dotenv_values

REPO = Path(__file__).resolve().parents[2]
DOTENV = {k: v for k, v in dotenv_values(REPO / ".env").items() if v is not None}


def run(args: list[str], *, timeout: float = 600, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command in the repository; on failure the assertion shows its output."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, **(env or {})})
    if check:
        assert proc.returncode == 0, (f"{' '.join(args)} exited {proc.returncode}:\n"
                                      f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc
