import json

import pytest
from notifier.entrypoints.cli import tickets as tickets_cli
from ticketing.tickets import (
    InvalidTicket,
    TicketPayload,
    b64url,
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    sign_ticket,
    unb64url,
    verify_ticket,
)

KEY = private_key_from_seed("bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc=")
PUBLIC = public_key_text(KEY)
PAYLOAD = TicketPayload("0b6f3c1e-8a2d-4a51-9a43-5a4c1b7e2f10", 42, ("F5", "F6"))


def test_sign_then_verify_returns_the_payload():
    text = sign_ticket(PAYLOAD, KEY)
    assert verify_ticket(text, public_key_from_text(PUBLIC)) == PAYLOAD


def test_payload_is_compact_json_with_the_contract_fields():
    raw = unb64url(sign_ticket(PAYLOAD, KEY).split(".")[0])
    assert raw == b'{"b":"0b6f3c1e-8a2d-4a51-9a43-5a4c1b7e2f10","s":42,"seats":["F5","F6"]}'


@pytest.mark.parametrize("change", ["seats", "showtime", "signature", "truncated", "garbage", "no_dot"])
def test_tampered_ticket_fails(change):
    payload, sig = sign_ticket(PAYLOAD, KEY).split(".")
    body = json.loads(unb64url(payload))
    if change == "seats":
        body["seats"] = ["A1", "A2"]
        text = f"{b64url(json.dumps(body, separators=(',', ':')).encode())}.{sig}"
    elif change == "showtime":
        body["s"] = 43
        text = f"{b64url(json.dumps(body, separators=(',', ':')).encode())}.{sig}"
    elif change == "signature":
        flipped = bytearray(unb64url(sig))
        flipped[0] ^= 1
        text = f"{payload}.{b64url(bytes(flipped))}"
    elif change == "truncated":
        text = f"{payload}.{sig[:-4]}"
    elif change == "garbage":
        text = "not-a-ticket.at-all!!"
    else:
        text = payload
    with pytest.raises(InvalidTicket):
        verify_ticket(text, public_key_from_text(PUBLIC))


def test_another_key_fails():
    other = private_key_from_seed("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=")
    with pytest.raises(InvalidTicket, match="signature"):
        verify_ticket(sign_ticket(PAYLOAD, other), public_key_from_text(PUBLIC))


def test_seed_must_be_32_bytes():
    with pytest.raises(ValueError, match="32 bytes"):
        private_key_from_seed("c2hvcnQ=")


def test_cli_verify_exit_codes(capsys):
    text = sign_ticket(PAYLOAD, KEY)
    assert tickets_cli.main(["verify", text, "--public-key", PUBLIC]) == 0
    assert json.loads(capsys.readouterr().out)["seats"] == ["F5", "F6"]
    tampered = text[:-3] + ("A" if text[-3] != "A" else "B") + text[-2:]
    assert tickets_cli.main(["verify", tampered, "--public-key", PUBLIC]) == 1
    assert "INVALID" in capsys.readouterr().out
