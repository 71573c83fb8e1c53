"""`python -m notifier.entrypoints.cli.customers`: the operator's customer directory (where ticket e-mails go).

    python -m notifier.entrypoints.cli.customers upsert --id 7 --email ana@example.com --name "Ana" [--locale es]
    python -m notifier.entrypoints.cli.customers import customers.csv   (header: customer_id,email,name[,locale])
    python -m notifier.entrypoints.cli.customers list
    python -m notifier.entrypoints.cli.customers missing     (booking events sent to nobody: no address anywhere)

The directory lives in the notifier schema (table `customer`); it uses NOTIFIER_DATABASE_URL (.env). `locale` is
the language of the customer's e-mails (en, es, vi; any other locale gets English) and the form of its numbers.
The directory is an override and an import: a customer with no row here gets his e-mails at the address his
identity provider stated (hold-service's buyer contacts, docs/sign-in.md). An event with no address anywhere is
processed without e-mail, counted (ticketing_notifier_bookings_without_address_total) and listed by `missing`;
points are still credited. What is not an address is refused with the reason (nothing is written);
internationalized addresses (`josé@exämple.com`, IDN domains) are accepted and stored normalized.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from notifier.config import NotifierSettings
from notifier.domain.addresses import InvalidAddress
from notifier.domain.commands import UpsertCustomers
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.common import command_parser, run, with_deps
from notifier.service_layer.customers import checked, list_customers, list_without_address, upsert_customers


class InvalidDirectory(ValueError):
    """Rows that cannot enter the directory, one reason per line."""


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
    """Upsert into the directory at `dsn`, all or nothing (for tests and scripts)."""
    settings = NotifierSettings(database_url=dsn)
    return await with_deps(lambda deps: upsert_customers(UpsertCustomers(contacts), deps), settings)


def main(argv: list[str] | None = None) -> int:
    parser, sub = command_parser("notifier.entrypoints.cli.customers", __doc__)
    upsert = sub.add_parser("upsert", help="create or update one customer")
    upsert.add_argument("--id", type=int, required=True)
    upsert.add_argument("--email", required=True)
    upsert.add_argument("--name", default="")
    upsert.add_argument("--locale", default="en", help="the customer's language for e-mails: en, es, vi (others, "
                                                        "e.g. es_MX for Mexican number forms; English without a "
                                                        "catalogue)")
    sub.add_parser("import", help="upsert every row of a CSV file").add_argument("csv", type=Path)
    sub.add_parser("list", help="print the directory")
    sub.add_parser("missing", help="booking events no e-mail went out for: no address anywhere (newest first)")
    args = parser.parse_args(argv)
    if args.command == "missing":
        for m in run(list_without_address):
            now = f"directory now: {m.directory_email}" if m.directory_email else "no address yet"
            print(f"{m.recorded_at:%Y-%m-%dT%H:%M:%SZ}\t{m.event_type}\tbooking {m.booking_id}\t"
                  f"customer {m.customer_id}\t{now}")
        return 0
    if args.command == "list":
        for c in run(list_customers):
            print(f"{c.customer_id}\t{c.email}\t{c.name}\t{c.locale}")
        return 0
    try:
        contacts = (read_csv(args.csv) if args.command == "import"
                    else [checked(Contact(args.id, args.email, args.name, args.locale))])
    except ValueError as exc:  # InvalidAddress, InvalidDirectory: nothing was written
        print(f"refused, nothing written:\n{exc}", file=sys.stderr)
        return 2
    print(f"upserted {run(lambda deps: upsert_customers(UpsertCustomers(contacts), deps))} customer(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
