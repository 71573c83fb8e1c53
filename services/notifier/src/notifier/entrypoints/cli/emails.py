"""`python -m notifier.entrypoints.cli.emails`: the e-mail queue for operators, and re-queuing FAILED e-mails.

    python -m notifier.entrypoints.cli.emails list [--status FAILED] [--limit 50]
    python -m notifier.entrypoints.cli.emails retry --id 12 [--id 13 ...]
    python -m notifier.entrypoints.cli.emails retry --failed [--reason rejected]

An e-mail is FAILED when the SMTP server refused it for good (5xx), when it needs SMTPUTF8 and the server
does not offer it, when it could not be rendered (not an address), or after the retry bounds
(EMAIL_MAX_ATTEMPTS, EMAIL_MAX_AGE_SECONDS). `retry` renders it again for the address now in the
directory and makes it PENDING; running it twice changes nothing more. Exit status 1 if an e-mail could
not be re-queued (the reason is printed). Uses NOTIFIER_DATABASE_URL (.env).
"""

from __future__ import annotations

import sys

from notifier.domain.commands import RequeueEmails
from notifier.entrypoints.cli.common import command_parser, run
from notifier.service_layer.requeue import email_listing, requeue_emails

COLUMNS = ("id", "status", "kind", "attempts", "failure_reason", "recipient", "last_error")


def main(argv: list[str] | None = None) -> int:
    parser, sub = command_parser("notifier.entrypoints.cli.emails", __doc__)
    show = sub.add_parser("list", help="the newest e-mails with their status")
    show.add_argument("--status", choices=["PENDING", "SENT", "FAILED"])
    show.add_argument("--limit", type=int, default=50)
    again = sub.add_parser("retry", help="re-queue FAILED e-mails")
    which = again.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, action="append", dest="ids", help="an e-mail id (repeatable)")
    which.add_argument("--failed", action="store_true", help="every FAILED e-mail")
    again.add_argument("--reason", help="with --failed: only this failure reason")
    args = parser.parse_args(argv)
    if args.command == "list":
        for row in run(lambda deps: email_listing(args.status, args.limit, deps)):
            print("\t".join(str(row[c]) for c in COLUMNS))
        return 0
    cmd = RequeueEmails(args.ids or [], all_failed=args.failed, reason=args.reason)
    results = run(lambda deps: requeue_emails(cmd, deps))
    for r in results:
        print(f"{r.email_id}\t{'ok' if r.done else 'NOT RE-QUEUED'}\t{r.note}")
    print(f"{sum(r.done for r in results)} of {len(results)} e-mail(s) done")
    return 0 if all(r.done for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
