"""What each SMTP failure means for the message (real aiosmtplib exception objects, no server)."""

import pytest
from aiosmtplib import (
    SMTPConnectError,
    SMTPConnectResponseError,
    SMTPDataError,
    SMTPNotSupported,
    SMTPReadTimeoutError,
    SMTPRecipientRefused,
    SMTPRecipientsRefused,
    SMTPResponseException,
    SMTPSenderRefused,
    SMTPServerDisconnected,
)
from notifier.adapters.mailer import classify
from notifier.domain.delivery import Failure


def refused(code: int) -> SMTPRecipientsRefused:
    return SMTPRecipientsRefused([SMTPRecipientRefused(code, "no", "a@example.com")])


@pytest.mark.parametrize(("error", "failure"), [
    (refused(550), Failure.REJECTED),  # mailbox unavailable
    (refused(553), Failure.REJECTED),  # mailbox name not allowed
    (SMTPDataError(554, "transaction failed"), Failure.REJECTED),
    (SMTPSenderRefused(552, "too big", "t@cinema.example"), Failure.REJECTED),
    (SMTPNotSupported("SMTPUTF8 is not supported by this server"), Failure.REJECTED),
    (UnicodeEncodeError("ascii", "josé", 3, 4, "no"), Failure.REJECTED),
    (refused(450), Failure.DEFERRED),  # mailbox busy
    (refused(452), Failure.DEFERRED),  # insufficient storage
    (SMTPDataError(451, "local error"), Failure.DEFERRED),
    (SMTPResponseException(421, "closing"), Failure.UNAVAILABLE),
    (SMTPConnectResponseError(554, "no service"), Failure.UNAVAILABLE),
    (SMTPConnectError("Error connecting to 127.0.0.1 on port 1: [Errno 111]"), Failure.UNAVAILABLE),
    (ConnectionRefusedError(111, "refused"), Failure.UNAVAILABLE),
    (ConnectionResetError(104, "reset"), Failure.UNAVAILABLE),
    (SMTPServerDisconnected("Unexpected EOF"), Failure.UNAVAILABLE),
    (SMTPReadTimeoutError("Timed out waiting for server response"), Failure.UNAVAILABLE),
    (TimeoutError(), Failure.UNAVAILABLE),
])
def test_classify(error, failure):
    classified = classify(error)
    assert classified.failure is failure
    assert type(error).__name__ in classified.detail
