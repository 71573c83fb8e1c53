"""`python -m notifier.entrypoints.worker [--roles consumer,sender]`: the faust worker (port 8004).

Roles: `consumer` (the booking-events agent) and `sender` (the SMTP sender loop); both by default.
Kubernetes may run them as separate Deployments; the ops pages are served by either.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import faust
from ticketing.kafka import create_topics
from ticketing.runtime import roles_from_argv

from notifier.bootstrap import bootstrap
from notifier.config import NotifierSettings
from notifier.entrypoints.faust_app import create_app

ROLES = ("consumer", "sender")


def main(argv: list[str] | None = None) -> int:
    roles = set(roles_from_argv(ROLES, __doc__, argv))
    settings = NotifierSettings()
    Path(settings.faust_data_dir).mkdir(parents=True, exist_ok=True)  # faust mkdirs one level
    # On the loop faust will then run on (asyncio.run would leave no current loop for faust's worker): the
    # pool must belong to it, and faust ignores a source topic missing at start and never re-subscribes.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(create_topics(settings.kafka_bootstrap_servers))
    app = create_app(loop.run_until_complete(bootstrap(settings)), roles)
    worker = faust.Worker(app, loglevel=settings.log_level, redirect_stdouts=False)
    worker.execute_from_commandline()  # runs until SIGTERM/SIGINT, then exits the process
    return 0


if __name__ == "__main__":
    sys.exit(main())
