"""`python -m gateway_simulator`: serve the simulator on its configured port (8010)."""

from __future__ import annotations

import uvicorn
from ticketing.api.server import HeadLimitedHttpTools
from ticketing.logs import configure_logging

from gateway_simulator.app import get_application
from gateway_simulator.config import SimulatorSettings


def main() -> None:
    settings = SimulatorSettings()
    configure_logging(settings.service_name, settings.log_level)
    # Served as the APIs are (ticketing.launcher): the peer's address, the head-size limit.
    uvicorn.run(get_application(settings), host=settings.host, port=settings.port, log_config=None,
                proxy_headers=False, http=HeadLimitedHttpTools)


if __name__ == "__main__":
    main()
