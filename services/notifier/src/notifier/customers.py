"""`python -m notifier.customers`: the operator's customer directory (where ticket e-mails go).

    python -m notifier.customers upsert --id 7 --email ana@example.com --name "Ana" [--locale es]
    python -m notifier.customers import customers.csv      (header: customer_id,email,name[,locale])
    python -m notifier.customers list

The directory lives in the notifier schema (table `customer`); it uses NOTIFIER_DATABASE_URL (.env).
An event for a customer with no row here is processed without e-mail (log action `notify.no_contact`);
points are still credited. Addresses are checked here, where they enter the directory: what is not an
address is refused with the reason (nothing is written); internationalized addresses (`josé@exämple.com`,
IDN domains) are accepted and stored normalized (NFC, lower-case domain).
"""

from __future__ import annotations

import asyncio
import csv
import sys
from dataclasses import replace
from pathlib import Path

import asyncpg

from notifier.adapters.repository import PgNotifierRepository
from notifier.cli import command_parser, on_connection
from notifier.config import NotifierSettings
from notifier.domain.addresses import InvalidAddress, parse_address
from notifier.domain.messages import Contact


class InvalidDirectory(ValueError):
    """Rows that cannot enter the directory, one reason per line."""


def checked(contact: Contact) -> Contact:
    """The contact with its address normalized; raises InvalidAddress with the reason."""
    return replace(contact, email=parse_address(contact.email).unicode)


def read_csv(path: Path) -> list[Contact]:
    contacts: list[Contact] = []
    errors: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):  # line 1 is the header
            try:
                contacts.append(checked(Contact(int(row["customer_id"]), (row.get("email") or "").strip(),
                                                (row.get("name") or "").strip(),
                                                (row.get("locale") or "en").strip())))
            except (InvalidAddress, ValueError, KeyError) as exc:
                errors.append(f"line {line}: {exc}")
    if errors:
        raise InvalidDirectory("\n".join(errors))
    return contacts


async def upsert_all(dsn: str, contacts: list[Contact]) -> int:
    contacts = [checked(c) for c in contacts]  # every path into the directory checks the address

    async def write(conn: asyncpg.Connection) -> int:
        async with conn.transaction():  # a CSV import is all-or-nothing
            repo = PgNotifierRepository(conn)
            for contact in contacts:
                await repo.upsert_customer(contact)
        return len(contacts)
    return await on_connection(dsn, write)


async def list_all(dsn: str) -> list[Contact]:
    return await on_connection(dsn, lambda conn: PgNotifierRepository(conn).list_customers())


def main(argv: list[str] | None = None) -> int:
    parser, sub = command_parser("notifier.customers", __doc__)
    upsert = sub.add_parser("upsert", help="create or update one customer")
    upsert.add_argument("--id", type=int, required=True)
    upsert.add_argument("--email", required=True)
    upsert.add_argument("--name", default="")
    upsert.add_argument("--locale", default="en")
    sub.add_parser("import", help="upsert every row of a CSV file").add_argument("csv", type=Path)
    sub.add_parser("list", help="print the directory")
    args = parser.parse_args(argv)
    dsn = NotifierSettings().database_url
    if args.command == "list":
        for c in asyncio.run(list_all(dsn)):
            print(f"{c.customer_id}\t{c.email}\t{c.name}\t{c.locale}")
        return 0
    try:
        contacts = (read_csv(args.csv) if args.command == "import"
                    else [checked(Contact(args.id, args.email, args.name, args.locale))])
    except ValueError as exc:  # InvalidAddress, InvalidDirectory: nothing was written
        print(f"refused, nothing written:\n{exc}", file=sys.stderr)
        return 2
    print(f"upserted {asyncio.run(upsert_all(dsn, contacts))} customer(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
