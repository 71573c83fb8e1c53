"""The dev SMTP sink: `python -m smtp_sink --port 1025 --dir var/mail`.

Each accepted message is written as `<dir>/<message-id>.eml` (tmp file + rename, so a reader never sees
half a file), after two trace lines as a delivering server adds them: `Delivered-To: <recipient>` and
`X-Sink-SMTPUTF8: yes|no` (whether the client sent it with SMTPUTF8). Keyed by Message-ID, a re-sent
e-mail (the notifier's at-most-one retry after a crash) overwrites the same file: the customer-visible
result is one e-mail. A message without Message-ID gets a random name.

It offers SMTPUTF8 (RFC 6531), so internationalized addresses are delivered, unless `--no-smtputf8`.
For tests and demos of failing mail it answers RCPT of chosen recipients like a real server would:
`--refuse-recipients REGEX` with 550 (permanent), `--defer-recipients REGEX` with 451 (try later).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import uuid
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from ticketing.logs import configure_logging, log_action

logger = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


def file_name(message_id: str | None) -> str:
    stem = _UNSAFE.sub("_", (message_id or "").strip().strip("<>"))
    return f"{stem or 'no-id-' + uuid.uuid4().hex}.eml"


def write_atomically(folder: Path, name: str, data: bytes) -> Path:
    target = folder / name
    tmp = folder / f".{name}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return target


class MailDirHandler:
    def __init__(self, folder: Path, refuse: re.Pattern[str] | None = None,
                 defer: re.Pattern[str] | None = None) -> None:
        self.folder, self.refuse, self.defer = folder, refuse, defer

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        if self.refuse is not None and self.refuse.search(address):
            log_action(logger, "smtp_sink.refused", recipient=address)
            return f"550 5.1.1 <{address}>: mailbox unavailable (refused by --refuse-recipients)"
        if self.defer is not None and self.defer.search(address):
            log_action(logger, "smtp_sink.deferred", recipient=address)
            return f"451 4.2.0 <{address}>: try again later (deferred by --defer-recipients)"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        data: bytes = envelope.original_content or envelope.content
        message_id = BytesHeaderParser().parsebytes(data).get("Message-ID")
        existed = (self.folder / file_name(message_id)).exists()
        trace = "".join(f"Delivered-To: {rcpt}\r\n" for rcpt in envelope.rcpt_tos)
        trace += f"X-Sink-SMTPUTF8: {'yes' if envelope.smtp_utf8 else 'no'}\r\n"
        path = write_atomically(self.folder, file_name(message_id), trace.encode() + data)
        log_action(logger, "smtp_sink.duplicate_overwritten" if existed else "smtp_sink.stored",
                   path=str(path), message_id=message_id, recipients=list(envelope.rcpt_tos),
                   smtputf8=envelope.smtp_utf8)
        return "250 Message accepted for delivery"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="smtp-sink", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1025)
    parser.add_argument("--dir", default="var/mail")
    parser.add_argument("--no-smtputf8", action="store_true", help="do not offer SMTPUTF8")
    parser.add_argument("--refuse-recipients", type=re.compile, metavar="REGEX",
                        help="answer RCPT of matching recipients with 550")
    parser.add_argument("--defer-recipients", type=re.compile, metavar="REGEX",
                        help="answer RCPT of matching recipients with 451")
    args = parser.parse_args(argv)
    configure_logging("smtp-sink")
    logging.getLogger("mail.log").setLevel(logging.WARNING)  # one line per SMTP verb otherwise
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    handler = MailDirHandler(folder, args.refuse_recipients, args.defer_recipients)
    controller = Controller(handler, hostname=args.host, port=args.port, data_size_limit=10 * 1024 * 1024,
                            enable_SMTPUTF8=not args.no_smtputf8)
    controller.start()
    log_action(logger, "smtp_sink.started", host=args.host, port=args.port, dir=str(folder),
               smtputf8=not args.no_smtputf8)
    try:
        asyncio.run(_wait_for_signal())
    finally:
        controller.stop()
    return 0


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


if __name__ == "__main__":
    raise SystemExit(main())
