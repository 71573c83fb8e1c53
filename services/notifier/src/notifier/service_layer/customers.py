"""The customer directory (where ticket e-mails go, and in which language), filled by operators. Every way into
it checks the address and the locale: what is not one is refused with the reason and nothing is written."""

from __future__ import annotations

from dataclasses import replace

from notifier.domain.addresses import parse_address
from notifier.domain.commands import UpsertCustomers
from notifier.domain.language import normalized_locale
from notifier.domain.messages import Contact
from notifier.service_layer.ports import Deps, WithoutAddress


def checked(contact: Contact) -> Contact:
    """The contact with its address and locale normalized; raises InvalidAddress or InvalidLocale with the
    reason. A locale we have no catalogue for (say `fr`) is kept: its e-mails are in English until one comes."""
    return replace(contact, email=parse_address(contact.email).unicode, locale=normalized_locale(contact.locale))


async def upsert_customers(cmd: UpsertCustomers, deps: Deps) -> int:
    contacts = [checked(c) for c in cmd.contacts]  # before the transaction: a refusal writes nothing
    async with deps.uow() as uow:
        for contact in contacts:
            await uow.customers.upsert(contact)
        await uow.commit()
    return len(contacts)


async def list_customers(deps: Deps) -> list[Contact]:
    async with deps.uow() as uow:
        return await uow.customers.all()


async def list_without_address(deps: Deps, limit: int = 200) -> list[WithoutAddress]:
    """The booking events no e-mail went out for (no address anywhere), newest first."""
    async with deps.uow() as uow:
        return await uow.customers.without_address(limit)
