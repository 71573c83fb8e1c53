import time

pytest_plugins = ["ticketing.pytest_plugin"]


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.started_at = time.time()  # tests/contract reads only the events this run produced
