import json
from dataclasses import replace

import pytest
from notifier.entrypoints.cli import tickets as tickets_cli
from ticketing.tickets import (
    InvalidTicket,
    TicketKeyring,
    TicketPayload,
    b64url,
    key_id,
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
    kid = key_id(KEY.public_key())
    assert raw == b'{"b":"0b6f3c1e-8a2d-4a51-9a43-5a4c1b7e2f10","s":42,"seats":["F5","F6"],"k":"%s"}' % kid.encode()
    assert len(kid) == 16


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
    with pytest.raises(InvalidTicket, match="unknown key"):
        verify_ticket(sign_ticket(PAYLOAD, other), public_key_from_text(PUBLIC))


def test_another_key_claiming_the_current_key_id_fails():
    other = private_key_from_seed("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=")
    raw = replace(PAYLOAD, key_id=key_id(KEY.public_key())).to_json()
    with pytest.raises(InvalidTicket, match="signature"):
        verify_ticket(f"{b64url(raw)}.{b64url(other.sign(raw))}", public_key_from_text(PUBLIC))


RETIRED_SEED = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="


def test_a_rotated_keyring_still_verifies_tickets_of_the_retired_key_and_signs_with_the_new_one():
    retired = private_key_from_seed(RETIRED_SEED)
    old_ticket = sign_ticket(PAYLOAD, retired)
    ring = TicketKeyring.of("bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc=", [public_key_text(retired)])
    assert ring.verify(old_ticket) == PAYLOAD
    new_ticket = ring.sign(PAYLOAD)
    assert ring.verify(new_ticket).key_id == key_id(KEY.public_key()) == ring.current_id
    assert [k["kid"] for k in ring.published()] == [key_id(KEY.public_key()), key_id(retired.public_key())]
    assert ring.published()[0] == {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
                                   "kid": key_id(KEY.public_key()), "x": PUBLIC}
    with pytest.raises(InvalidTicket, match="unknown key"):  # the old keyring does not know the new key
        TicketKeyring.of(RETIRED_SEED).verify(new_ticket)


def test_a_ticket_signed_before_key_ids_verifies_with_any_listed_key():
    raw = PAYLOAD.to_json()  # no "k"
    legacy = f"{b64url(raw)}.{b64url(KEY.sign(raw))}"
    ring = TicketKeyring.of(RETIRED_SEED, [PUBLIC])
    assert ring.verify(legacy) == PAYLOAD and ring.verify(legacy).key_id is None
    with pytest.raises(InvalidTicket, match="signature"):
        TicketKeyring.of(RETIRED_SEED).verify(legacy)


@pytest.mark.parametrize("body", [b'{"b":"x","s":1,"seats":"F5"}', b'{"b":"x","s":1,"seats":[],"k":7}', b"[1]",
                                  b'{"b":"x","s":"one","seats":[]}'])
def test_a_payload_of_the_wrong_shape_is_invalid(body):
    with pytest.raises(InvalidTicket, match="not a ticket"):
        verify_ticket(f"{b64url(body)}.{b64url(KEY.sign(body))}", public_key_from_text(PUBLIC))


def test_an_overlong_text_is_invalid_before_any_decoding():
    with pytest.raises(InvalidTicket, match="expected"):
        verify_ticket("A" * 5000 + ".B", public_key_from_text(PUBLIC))


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
