"""The sender's decisions on fakes: no e-mail blocks another; transient ones back off; bounds; outages."""

import asyncio

from notifier.domain.delivery import DeliveryError, Failure, RetryPolicy
from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import Mailer
from notifier.service_layer.sender import Outcome, SenderLoop, send_pending
from notifier_fakes import FakeQueue, FakeUnitOfWork, Row

POLICY = RetryPolicy(base_seconds=10, max_delay_seconds=40, max_attempts=5, max_age_seconds=3600,
                     max_pause_seconds=8)


class ScriptedMailer(Mailer):
    """Refuses by recipient: `fail` maps a recipient to the error it gets; `down` fails every send."""

    def __init__(self, fail: dict[str, Exception] | None = None) -> None:
        self.fail = fail or {}
        self.down = False
        self.sent: list[str] = []
        self.tries = 0

    async def send(self, email: RenderedEmail) -> None:
        self.tries += 1
        if self.down:
            raise DeliveryError(Failure.UNAVAILABLE, "ConnectionRefusedError: [Errno 111]")
        if email.recipient in self.fail:
            raise self.fail[email.recipient]
        self.sent.append(email.recipient)


def transactions(queue: FakeQueue):
    """A unit of work per e-mail, all on `queue`."""
    return lambda: FakeUnitOfWork(queue=queue)


def queue_of(*recipients: str) -> FakeQueue:
    return FakeQueue([Row(i, r) for i, r in enumerate(recipients, start=1)])


REFUSED = DeliveryError(Failure.REJECTED, "SMTPRecipientsRefused: 550 mailbox unavailable")
LATER = DeliveryError(Failure.DEFERRED, "SMTPRecipientsRefused: 451 try again later")


async def test_a_permanently_refused_email_is_failed_and_the_next_ones_are_sent():
    queue = queue_of("gone@example.com", "a@example.com", "b@example.com")
    mailer = ScriptedMailer({"gone@example.com": REFUSED})
    result = await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert mailer.sent == ["a@example.com", "b@example.com"]
    assert [(r.status, r.attempts, r.reason) for r in queue.rows] == [
        ("FAILED", 1, "rejected"), ("SENT", 1, None), ("SENT", 1, None)]
    assert "550" in (queue.rows[0].error or "")
    assert result.counts[Outcome.FAILED] == 1 and result.counts[Outcome.SENT] == 2 and not result.server_down
    await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert mailer.tries == 3  # a FAILED e-mail is never tried again by itself


async def test_a_deferred_email_backs_off_and_lets_the_next_ones_through():
    queue = queue_of("full@example.com", "a@example.com")
    mailer = ScriptedMailer({"full@example.com": LATER})
    await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert mailer.sent == ["a@example.com"]
    full = queue.rows[0]
    assert (full.status, full.attempts, full.due_at) == ("PENDING", 1, 10)
    for now, expected_due in ((10, 30), (30, 70), (70, 110)):  # 20, 40, then 80 capped at 40
        queue.now = now
        await send_pending(transactions(queue), mailer, POLICY, limit=10)
        assert full.due_at == expected_due
    queue.now = 110
    await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert (full.status, full.attempts, full.reason) == ("FAILED", 5, "attempts_exhausted")


async def test_a_deferred_email_past_the_age_bound_is_failed():
    queue = queue_of("full@example.com")
    queue.rows[0].age = 3600
    await send_pending(transactions(queue), ScriptedMailer({"full@example.com": LATER}), POLICY, limit=10)
    assert (queue.rows[0].status, queue.rows[0].reason) == ("FAILED", "too_old")


async def test_an_unexpected_error_is_counted_and_does_not_block_the_queue():
    queue = queue_of("bug@example.com", "a@example.com")
    mailer = ScriptedMailer({"bug@example.com": KeyError("a bug in a mailer")})
    await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert mailer.sent == ["a@example.com"]
    assert (queue.rows[0].status, queue.rows[0].attempts) == ("PENDING", 1)
    assert "KeyError" in (queue.rows[0].error or "")


async def test_an_unavailable_server_ends_the_pass_after_one_attempt():
    queue = queue_of("a@example.com", "b@example.com", "c@example.com")
    mailer = ScriptedMailer()
    mailer.down = True
    result = await send_pending(transactions(queue), mailer, POLICY, limit=10)
    assert result.server_down and mailer.tries == 1
    assert [r.attempts for r in queue.rows] == [1, 0, 0]


async def test_the_loop_pauses_longer_while_the_server_stays_down_then_delivers_everything_once():
    queue = queue_of("a@example.com", "b@example.com", "c@example.com")
    mailer = ScriptedMailer()
    mailer.down = True
    loop = SenderLoop(transactions(queue), mailer, POLICY, batch_size=10, interval=1.0, wake=asyncio.Event())
    pauses = []
    for _ in range(5):
        queue.now += 100  # every deferred e-mail is due again: only the pause keeps the server in peace
        await loop.run_pass()
        pauses.append(loop.pause_seconds())
    assert pauses == [1, 2, 4, 8, 8] and mailer.tries == 5
    mailer.down = False
    queue.now += 100
    await loop.run_pass()
    assert loop.outages == 0 and loop.pause_seconds() == 0
    assert sorted(mailer.sent) == ["a@example.com", "b@example.com", "c@example.com"]
    assert all(r.status == "SENT" for r in queue.rows)


async def test_an_idle_pass_says_nothing_about_the_server():
    queue = queue_of("a@example.com")
    mailer = ScriptedMailer()
    mailer.down = True
    loop = SenderLoop(transactions(queue), mailer, POLICY, batch_size=10, interval=1.0, wake=asyncio.Event())
    await loop.run_pass()
    await loop.run_pass()  # nothing due (backing off): the server was not asked
    assert loop.outages == 1
