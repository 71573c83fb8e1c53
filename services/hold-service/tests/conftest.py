"""Fixtures for every hold-service test: `fakes`, the in-memory ports of tests/fakes.py."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from ticketing_testing import import_path

FAKES = import_path(Path(__file__).with_name("fakes.py"), "hold_service_test_fakes")


@pytest.fixture(scope="session")
def fakes() -> ModuleType:
    """tests/fakes.py (test modules cannot import it under --import-mode=importlib)."""
    return FAKES
