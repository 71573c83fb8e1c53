"""`python -m notifier.entrypoints.cli.tickets`: the ticket-signing key's public half, and offline verification.

    python -m notifier.entrypoints.cli.tickets public-key      print the key scanners verify with
    python -m notifier.entrypoints.cli.tickets verify '<decoded QR text>' [--public-key KEY]
        exit 0 and print the payload JSON if the signature holds; exit 1 and print the reason if not.
        Without --public-key the key derived from QR_SIGNING_KEY (.env) is used.
"""

from __future__ import annotations

import json
import sys

from ticketing.tickets import (
    InvalidTicket,
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    verify_ticket,
)

from notifier.config import NotifierSettings
from notifier.entrypoints.cli.common import command_parser


def _published_key() -> str:
    return public_key_text(private_key_from_seed(NotifierSettings().qr_signing_key))


def main(argv: list[str] | None = None) -> int:
    parser, sub = command_parser("notifier.entrypoints.cli.tickets", __doc__)
    sub.add_parser("public-key", help="print the Ed25519 public key (base64url, 32 bytes)")
    verify = sub.add_parser("verify", help="verify a decoded QR ticket")
    verify.add_argument("ticket")
    verify.add_argument("--public-key", help="base64url public key (default: derived from QR_SIGNING_KEY)")
    args = parser.parse_args(argv)
    if args.command == "public-key":
        print(_published_key())
        return 0
    try:
        payload = verify_ticket(args.ticket, public_key_from_text(args.public_key or _published_key()))
    except InvalidTicket as exc:
        print(f"INVALID: {exc}")
        return 1
    print(json.dumps({"valid": True, "b": payload.booking_id, "s": payload.showtime_id,
                      "seats": list(payload.seats)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
