"""Cluster mode's HAProxy agrees with the API instances' shedding settings, as its configuration is written
(`cluster.sh haproxy-config`: the file `cluster.sh up` writes, checked by `haproxy -c`; nothing is started):
each server's maxconn is SHED_MAX_IN_FLIGHT and a quarter (the holds' share of it for the routes a rush floods),
the queue waits SHED_QUEUE_TIMEOUT_MS, and what the
balancer answers itself is the contract's 503 UNAVAILABLE with the instances' Retry-After, on a connection
that stays open. A balancer that queued for longer, or sent an instance more than it sheds, would have the
admitted requests wait behind a flood (make bench-overload, docs/benchmarks.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from deploy_support import run

SHEDDING = {"SHED_MAX_IN_FLIGHT": "40", "SHED_QUEUE_TIMEOUT_MS": "7.5", "SHED_RETRY_AFTER_SECONDS": "3"}
APIS = ("hold-api", "hold-api-internal", "payment-api", "voucher-api")


def written(tmp_path: Path, shedding: dict[str, str]) -> tuple[str, Path]:
    run(["deploy/local/cluster.sh", "haproxy-config"], timeout=600,
        env={"CLUSTER_DIR": str(tmp_path), "CLUSTER_PORT": "7400", **shedding})
    return (tmp_path / "haproxy.cfg").read_text(), tmp_path


def servers(config: str) -> list[str]:
    return [line.strip() for line in config.splitlines() if line.strip().startswith("server ")]


def test_each_server_takes_its_shedding_limit_and_a_quarter_and_the_queue_its_timeout(tmp_path: Path) -> None:
    config, _ = written(tmp_path, SHEDDING)
    lines = [line for line in servers(config) if " track " not in line]
    assert len(lines) == 2 * len(APIS)
    assert all(line.endswith(" maxconn 50") for line in lines), lines
    assert re.findall(r"^\s*timeout queue (\S+)$", config, re.M) == ["8ms"]  # whole milliseconds, rounded up


def test_holds_go_to_each_hold_api_instance_up_to_the_holds_share_of_the_limit(tmp_path: Path) -> None:
    config, _ = written(tmp_path, SHEDDING)
    tracking = [line.split() for line in servers(config) if " track " in line]
    assert [(w[1], w[4], w[-1]) for w in tracking] == [("hold-api-holds-1", "hold-api/hold-api-1", "30"),
                                                        ("hold-api-holds-2", "hold-api/hold-api-2", "30")]
    assert re.findall(r"^\s*use_backend (\S+) if \{ method POST \} \{ path_reg (\S+) \}$", config, re.M) == [
        ("hold-api-holds", "^/showtimes/[^/]+/holds$"), ("hold-api-holds", "^/showtimes/[^/]+/queue$")]


def test_with_shedding_off_no_server_has_a_limit(tmp_path: Path) -> None:
    config, _ = written(tmp_path, {**SHEDDING, "SHED_MAX_IN_FLIGHT": "0"})
    assert servers(config) and not any("maxconn" in line for line in servers(config))
    assert "use_backend" not in config


def test_what_the_balancer_answers_itself_is_the_contracts_503_with_retry_after(tmp_path: Path) -> None:
    config, directory = written(tmp_path, SHEDDING)
    files = dict(re.findall(r"^\s*errorfile (\d+) (\S+)$", config, re.M))
    assert set(files) == {"502", "503", "504"}
    raw = Path(files["503"]).read_bytes()
    assert Path(files["503"]).parent == directory
    head, body = raw.split(b"\r\n\r\n", 1)
    status, *fields = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (f.split(":", 1) for f in fields)}
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert headers["retry-after"] == "3"
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert "connection" not in headers  # keep-alive: a refused client retries on the same connection
    error = orjson.loads(body)
    assert error["error"] == "UNAVAILABLE" and error["message"]


@pytest.mark.parametrize("api", APIS)
def test_every_api_has_a_front_door_over_its_two_instances(tmp_path: Path, api: str) -> None:
    config, _ = written(tmp_path, SHEDDING)
    assert f"frontend {api}\n" in config
    assert [line.split()[1] for line in servers(config)
            if re.fullmatch(rf"{api}-\d+", line.split()[1]) and " track " not in line] == [f"{api}-1", f"{api}-2"]
