import time

pytest_plugins = ["ticketing.pytest_plugin"]

# Judges what the rest of the run made the services publish, so it runs after every other test.
RUNS_LAST = "tests/contract/test_event_contract.py"


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.started_at = time.time()  # tests/contract reads only the events this run produced


def pytest_collection_modifyitems(items) -> None:  # type: ignore[no-untyped-def]
    items.sort(key=lambda item: item.nodeid.startswith(RUNS_LAST))  # stable: the order is kept otherwise
