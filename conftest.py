import os
import time

pytest_plugins = ["ticketing_testing.pytest_plugin"]

# Judges what the rest of the run made the services publish, so it runs after every other test.
RUNS_LAST = "tests/contract/test_event_contract.py"
# Tests that start a whole stack of service processes each. Under `pytest -n --dist loadfile` (make test-suite) each
# file is one unit of work, kept on one worker (its module-scoped stack with it); the stack files are handed out
# first, being the longest.
STACKS = ("tests/e2e/", "tests/demo/", "tests/fuzz/", "tests/observability/")


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    # tests/contract reads only the events this run produced. `make test` runs the suite in two phases (in
    # parallel, then the serial tests alone) and gives both the time the first began.
    config.started_at = float(os.environ.get("TICKETING_RUN_STARTED_AT") or time.time())


def pytest_collection_modifyitems(items) -> None:  # type: ignore[no-untyped-def]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: not item.nodeid.startswith(STACKS))  # stable: the order is kept otherwise
    items.sort(key=lambda item: item.nodeid.startswith(RUNS_LAST))
