import time

import jwt
import pytest
from pydantic import ValidationError
from ticketing.auth import InvalidToken, issue_token, verify_token
from ticketing.db import Queries
from ticketing.settings import ServiceSettings, TokenSettings

SECRET = "s" * 40


def test_token_round_trip():
    principal = verify_token(SECRET, issue_token(SECRET, sub="7", role="customer"))
    assert (principal.customer_id, principal.role) == (7, "customer")


@pytest.mark.parametrize("claims_change", [
    {"iss": "other"}, {"aud": "other"}, {"exp": int(time.time()) - 10}, {"role": "root"}, {"sub": "abc"},
])
def test_bad_claims_are_refused(claims_change):
    now = int(time.time())
    claims = {"sub": "7", "role": "customer", "iss": "ticketing", "aud": "ticketing", "exp": now + 60,
              **claims_change}
    with pytest.raises(InvalidToken):
        verify_token(SECRET, jwt.encode(claims, SECRET, algorithm="HS256"))


def test_alg_none_and_other_keys_are_refused():
    claims = {"sub": "7", "role": "admin", "iss": "ticketing", "aud": "ticketing", "exp": int(time.time()) + 60}
    with pytest.raises(InvalidToken):
        verify_token(SECRET, jwt.encode(claims, None, algorithm="none"))
    with pytest.raises(InvalidToken):
        verify_token(SECRET, jwt.encode(claims, "another-secret-" * 3, algorithm="HS256"))
    with pytest.raises(InvalidToken):
        verify_token(SECRET, jwt.encode(claims, SECRET, algorithm="HS512"))


def test_default_secrets_run_only_in_explicit_dev_mode(monkeypatch):
    monkeypatch.delenv("APP_ENV", raising=False)
    with pytest.raises(ValidationError, match="JWT_SECRET"):  # APP_ENV forgotten: fails closed
        TokenSettings(_env_file=None)
    for mode in ("production", "test"):
        with pytest.raises(ValidationError, match="JWT_SECRET"):
            TokenSettings(app_env=mode, _env_file=None)
        with pytest.raises(ValidationError, match="JWT_SECRET"):
            TokenSettings(app_env=mode, jwt_secret="short", _env_file=None)
    assert TokenSettings(jwt_secret="x" * 40, _env_file=None).app_env == "production"
    assert TokenSettings(app_env="dev", _env_file=None).jwt_secret  # dev runs with the default
    assert "jwt_secret" not in ServiceSettings.model_fields  # only the services that verify tokens hold it


def test_an_identity_provider_needs_issuer_audience_and_https():
    with pytest.raises(ValidationError, match="JWT_ISSUER"):
        TokenSettings(app_env="dev", jwt_jwks_url="https://idp.example/jwks", _env_file=None)
    with pytest.raises(ValidationError, match="https"):
        TokenSettings(app_env="production", jwt_secret="x" * 40, jwt_jwks_url="http://idp.example/jwks", jwt_issuer="i",
                      jwt_audience="a", _env_file=None)
    assert TokenSettings(app_env="dev", jwt_jwks_url="http://127.0.0.1:9/jwks", jwt_issuer="i", jwt_audience="a",
                         _env_file=None).jwt_jwks_url


@pytest.mark.parametrize("sub", ["\u0667", "\uff17", "7\u0667", " 7", "+7", "7.0", "", str(2**63)])
def test_sub_must_be_ascii_digits(sub):
    """Arabic-Indic and fullwidth digits pass str.isdecimal() and int() reads them as 7: they would be another
    spelling of customer 7."""
    now = int(time.time())
    claims = {"sub": sub, "role": "customer", "iss": "ticketing", "aud": "ticketing", "exp": now + 60}
    with pytest.raises(InvalidToken, match="sub"):
        verify_token(SECRET, jwt.encode(claims, SECRET, algorithm="HS256"))
    assert verify_token(SECRET, jwt.encode({**claims, "sub": "7"}, SECRET, algorithm="HS256")).customer_id == 7


def test_sql_loader_reads_named_queries(tmp_path):
    path = tmp_path / "q.sql"
    path.write_text("-- name: first\n-- What it does.\nSELECT 1;\n\n-- name: second\n-- Another.\nSELECT\n  2;\n")
    queries = Queries.load(path)
    assert queries.first == "SELECT 1"
    assert queries.second == "SELECT\n  2"
    with pytest.raises(AttributeError):
        _ = queries.third
    path.write_text("-- name: first\nSELECT 1;\n-- name: first\nSELECT 2;\n")
    with pytest.raises(ValueError, match="twice"):
        Queries.load(path)
