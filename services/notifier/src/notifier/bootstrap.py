"""The one composition root: settings in, `Service` out (its `Deps` and what the process closes)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from email.utils import parseaddr

import asyncpg
from ticketing.db import create_pool
from ticketing.tickets import private_key_from_seed

from notifier.adapters.buyer_contacts import HttpBuyerContacts
from notifier.adapters.catalogues import load_catalogues
from notifier.adapters.mailer import SmtpLogin, SmtpMailer
from notifier.adapters.repository import PgNotifierUnitOfWork
from notifier.config import NotifierSettings
from notifier.domain.policy import NotifyPolicy
from notifier.service_layer.ports import Deps, Mailer


@dataclass
class Service:
    """The wired notifier: its `Deps`, and the pool the process closes at the end."""

    deps: Deps
    pool: asyncpg.Pool

    async def close(self) -> None:
        await self.pool.close()


def smtp_login(s: NotifierSettings) -> SmtpLogin:
    tls = ssl.create_default_context(cafile=s.smtp_tls_cafile or None) if s.smtp_starttls else None
    return SmtpLogin(starttls=s.smtp_starttls, username=s.smtp_username, password=s.smtp_password, tls=tls)


def notify_policy(s: NotifierSettings) -> NotifyPolicy:
    return NotifyPolicy(mail_from=s.mail_from, signing_key=private_key_from_seed(s.qr_signing_key),
                        cents_per_point=s.points_per_cents, catalogues=load_catalogues(), currency=s.currency)


async def bootstrap(settings: NotifierSettings | None = None, *, mailer: Mailer | None = None) -> Service:
    """The real SMTP mailer by default; tests may pass another."""
    s = settings or NotifierSettings()
    pool = await create_pool(s.database_url, min_size=1, max_size=s.db_pool_max)
    mailer = mailer or SmtpMailer(s.smtp_host, s.smtp_port, parseaddr(s.mail_from)[1], s.smtp_timeout_seconds,
                                  smtp_login(s))
    contacts = HttpBuyerContacts(s.contacts_url, s.contacts_api_key, s.dependency_timeout_seconds) \
        if s.contacts_url else None
    deps = Deps(settings=s, uow=lambda: PgNotifierUnitOfWork(pool), policy=notify_policy(s), mailer=mailer,
                contacts=contacts)
    return Service(deps=deps, pool=pool)
