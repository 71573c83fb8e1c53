"""The notifier's e-mail counters (served on /metrics by the faust web server)."""

from __future__ import annotations

from prometheus_client import Counter

EMAILS_SENT = Counter("ticketing_notifier_emails_sent_total", "E-mails accepted by the SMTP server")
EMAILS_DEFERRED = Counter("ticketing_notifier_email_send_errors_total",
                          "SMTP attempts that failed and will be retried, by failure kind", ["kind"])
# reason: rejected, smtputf8_unsupported, attempts_exhausted, too_old, invalid_address, unrenderable
EMAILS_FAILED = Counter("ticketing_notifier_emails_failed_total", "E-mails given up on (status FAILED), by reason",
                        ["reason"])
# A booking event with no address in the directory nor from the buyer's identity provider (alerted on).
BOOKINGS_WITHOUT_ADDRESS = Counter("ticketing_notifier_bookings_without_address_total",
                                   "Booking events no e-mail could be sent for: no address anywhere, by event type",
                                   ["event_type"])
