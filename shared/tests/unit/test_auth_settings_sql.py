import time

import jwt
import pytest
from pydantic import ValidationError
from ticketing.auth import InvalidToken, issue_token, verify_token
from ticketing.db import Queries
from ticketing.settings import ServiceSettings

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


def test_production_refuses_default_or_short_secrets():
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        ServiceSettings(app_env="production", _env_file=None)
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        ServiceSettings(app_env="production", jwt_secret="short", _env_file=None)
    assert ServiceSettings(app_env="production", jwt_secret="x" * 40, _env_file=None).app_env == "production"
    assert ServiceSettings(app_env="dev", _env_file=None).jwt_secret  # dev runs with the default


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
