"""The hosted checkout page: a tiny HTML form with Pay and Decline buttons."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from gateway_simulator.model import Session


def pay_page(session: Session) -> str:
    expires = datetime.fromtimestamp(session.expires_at, UTC).isoformat()
    amount = f"{session.amount_cents / 100:.2f}"
    buttons = ('<button name="action" value="pay">Pay</button> '
               '<button name="action" value="decline">Decline</button>') if session.status == "open" else ""
    return (f"<!doctype html><html><head><title>Pay {amount}</title></head><body>"
            f"<h1>Simulated checkout</h1><p>Amount: {amount}</p><p>Status: {escape(session.status)}"
            f" ({escape(session.payment_status)})</p>"
            f"<p>Expires at {expires}</p>"
            f'<form method="post" action="/pay/{escape(session.session_id)}">{buttons}</form>'
            "</body></html>")


def result_page(status: str) -> str:
    return f"<!doctype html><html><body><h1>Payment {escape(status)}</h1></body></html>"
