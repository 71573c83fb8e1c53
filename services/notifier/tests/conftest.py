"""Shared helpers for the notifier tests: QR extraction from an .eml, a fixed test signing key, and the fakes
(the tests/fakes package, as the `fakes` fixture and importable by name: `from notifier_fakes import ...`)."""

from __future__ import annotations

import base64
import io
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import zxingcpp
from PIL import Image
from ticketing_testing import import_path

FAKES = import_path(Path(__file__).with_name("fakes"), "notifier_fakes")
TEST_SEED = base64.b64encode(b"notifier-test-seed-32-bytes-long").decode()


def parse_eml(data: bytes | Path) -> EmailMessage:
    raw = data.read_bytes() if isinstance(data, Path) else data
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(msg, EmailMessage)
    return msg


def qr_texts(msg: EmailMessage) -> list[str]:
    """Decode every QR code in every PNG attachment (zxing-cpp + PIL, like a scanner app would)."""
    texts: list[str] = []
    for part in msg.iter_attachments():
        if part.get_content_type() == "image/png":
            image = Image.open(io.BytesIO(part.get_content()))
            found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)
            texts += [r.text for r in found]
    # zxing may report one QR code more than once (found at two scales): distinct texts, in order.
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="session")
def fakes() -> ModuleType:
    """tests/fakes (also importable by name: `from notifier_fakes import ...`)."""
    return FAKES


@pytest.fixture(scope="session")
def test_seed() -> str:
    return TEST_SEED


@pytest.fixture(scope="session")
def eml() -> SimpleNamespace:
    """`eml.parse(bytes|Path)` and `eml.qr_texts(msg)` (importlib mode: conftest is not importable)."""
    return SimpleNamespace(parse=parse_eml, qr_texts=qr_texts)
