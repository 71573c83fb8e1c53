"""Fixtures for every hold-service test: `fakes`, the in-memory ports of the tests/fakes package."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from ticketing_testing import import_path

FAKES = import_path(Path(__file__).with_name("fakes"), "hold_fakes")


@pytest.fixture(scope="session")
def fakes() -> ModuleType:
    """tests/fakes (test modules cannot import it by its folder's name under --import-mode=importlib)."""
    return FAKES
