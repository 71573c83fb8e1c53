"""The example consumer reaches a production cluster: TLS with the cluster's CA (and a client certificate for
mutual TLS), SASL with a user whose password it reads from the environment, never from its command line; the
options the consumer guide shows are the example's own."""

from __future__ import annotations

import datetime
import importlib.util
import re
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

EVENTS = Path(__file__).resolve().parents[2] / "docs" / "events"


def example() -> Any:
    spec = importlib.util.spec_from_file_location("seat_map_consumer", EVENTS / "examples" / "seat_map_consumer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_sasl_ssl_trusts_the_cluster_ca_and_takes_the_password_from_the_environment(tmp_path, monkeypatch) -> None:
    module, (ca, _) = example(), certificate(tmp_path, "cluster-ca")
    client_cert, client_key = certificate(tmp_path, "my-team")
    monkeypatch.setenv("TEAM_KAFKA_PASSWORD", "s3cret")
    args = module.parser().parse_args([
        "--bootstrap", "kafka.example.net:9093", "--security-protocol", "SASL_SSL", "--sasl-username", "my-team",
        "--sasl-password-env", "TEAM_KAFKA_PASSWORD", "--ssl-cafile", str(ca), "--ssl-certfile", str(client_cert),
        "--ssl-keyfile", str(client_key)])
    options = module.security(args)
    assert (options["security_protocol"], options["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("my-team", "s3cret")
    context: ssl.SSLContext = options["ssl_context"]
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [dict(x[0] for x in c["subject"])["commonName"] for c in context.get_ca_certs()] == ["cluster-ca"]


def test_sasl_without_a_password_in_the_environment_stops_before_connecting(monkeypatch) -> None:
    module = example()
    monkeypatch.delenv("KAFKA_SASL_PASSWORD", raising=False)
    args = module.parser().parse_args(["--security-protocol", "SASL_PLAINTEXT", "--sasl-username", "u"])
    with pytest.raises(SystemExit, match="KAFKA_SASL_PASSWORD"):
        module.security(args)
    assert module.security(module.parser().parse_args([])) == {"security_protocol": "PLAINTEXT"}


def test_every_option_the_consumer_guide_gives_the_example_is_its_own() -> None:
    known = {o for action in example().parser()._actions for o in action.option_strings}
    guide = (EVENTS / "README.md").read_text()
    named = set(re.findall(r"(--[a-z][a-z-]+)", guide.split("## Try it", 1)[1]))
    assert {"--security-protocol", "--sasl-username", "--ssl-cafile"} <= named
    assert named - {"--describe", "--entity-type", "--entity-name", "--bootstrap-server"} <= known
