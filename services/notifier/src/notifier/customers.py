"""`python -m notifier.customers`: the operator's customer directory (where ticket e-mails go).

    python -m notifier.customers upsert --id 7 --email ana@example.com --name "Ana" [--locale es]
    python -m notifier.customers import customers.csv      (header: customer_id,email,name[,locale])
    python -m notifier.customers list

The directory lives in the notifier schema (table `customer`); it uses NOTIFIER_DATABASE_URL (.env).
An event for a customer with no row here is processed without e-mail (log action `notify.no_contact`);
points are still credited.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from pathlib import Path

import asyncpg

from notifier.adapters.repository import PgNotifierRepository
from notifier.config import NotifierSettings
from notifier.domain.messages import Contact


def read_csv(path: Path) -> list[Contact]:
    with path.open(newline="") as fh:
        return [Contact(int(row["customer_id"]), row["email"].strip(), (row.get("name") or "").strip(),
                        (row.get("locale") or "en").strip()) for row in csv.DictReader(fh)]


async def upsert_all(dsn: str, contacts: list[Contact]) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():  # a CSV import is all-or-nothing
            repo = PgNotifierRepository(conn)
            for contact in contacts:
                await repo.upsert_customer(contact)
        return len(contacts)
    finally:
        await conn.close()


async def list_all(dsn: str) -> list[Contact]:
    conn = await asyncpg.connect(dsn)
    try:
        return await PgNotifierRepository(conn).list_customers()
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="notifier.customers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
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
    contacts = (read_csv(args.csv) if args.command == "import"
                else [Contact(args.id, args.email, args.name, args.locale)])
    print(f"upserted {asyncio.run(upsert_all(dsn, contacts))} customer(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
