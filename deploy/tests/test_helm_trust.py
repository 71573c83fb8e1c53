"""The chart's trust boundaries: the JWT key is never rendered anew (an existing Secret, a given value, or the
generated one read back from the cluster; a render that cannot read the cluster stops), only the services that
verify tokens hold it, the gateway's API key reaches payment-service, and TRUSTED_PROXIES is none by default and
the Ingress's controller when the Ingress is on (which routes customers, the door, the callback and the unbuffered
stream; test_helm_routes.py derives its routes from the services' OpenAPI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from deploy_support import CHART, by_kind, containers, render, run
from fake_kube import fake_cluster

KEY = "k" * 40
INGRESS = ["--set", f"jwt.value={KEY}", "--set", "ingress.enabled=true",
           "--set", "ingress.controllerCidrs={10.42.0.0/16,fd00:42::/56}"]


def jwt_keys(manifests: list[dict[str, Any]]) -> list[str]:
    return [s["stringData"]["JWT_SECRET"] for s in by_kind(manifests, "Secret").values()
            if "JWT_SECRET" in s.get("stringData", {})]


def env_names(container: dict[str, Any]) -> set[str]:
    return {e["name"] for e in container.get("env", [])}


def test_a_render_that_cannot_read_the_cluster_never_makes_a_new_key(helm: str) -> None:
    proc = run([helm, "template", "ticketing", str(CHART)], check=False)
    assert proc.returncode != 0 and "jwt.existingSecret" in proc.stderr
    assert jwt_keys(render(helm, "--set", f"jwt.value={KEY}")) == [KEY]
    kept = render(helm, "--set", "jwt.existingSecret=vault-jwt", "--set", "jwt.key=token")
    assert jwt_keys(kept) == []
    refs = {e["valueFrom"]["secretKeyRef"]["name"] + "/" + e["valueFrom"]["secretKeyRef"]["key"]
            for _, c in containers(kept) for e in c.get("env", []) if e["name"] == "JWT_SECRET"}
    assert refs == {"vault-jwt/token"}


def test_the_generated_key_is_read_back_from_the_cluster(helm: str, tmp_path: Path) -> None:
    with fake_cluster({"ticketing-jwt": {"JWT_SECRET": "kept-from-the-install-" * 2}}, tmp_path / "a") as config:
        renders = [render(helm, "--dry-run=server", env={"KUBECONFIG": str(config)}) for _ in range(2)]
    assert [jwt_keys(r) for r in renders] == [["kept-from-the-install-" * 2]] * 2
    with fake_cluster({}, tmp_path / "b") as config:  # the install: nothing to read back yet
        first = render(helm, "--dry-run=server", env={"KUBECONFIG": str(config)})
    [generated] = jwt_keys(first)
    assert len(generated) == 48 and generated != "kept-from-the-install-" * 2
    secret = by_kind(first, "Secret")["ticketing-jwt"]
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"  # uninstall keeps it too


def test_only_the_services_that_verify_tokens_hold_the_key(helm: str) -> None:
    manifests = render(helm, "--set", f"jwt.value={KEY}")
    holders = set()
    for workload, container in containers(manifests):
        service = workload["metadata"]["labels"]["app.kubernetes.io/name"]
        secrets = [by_kind(manifests, "Secret").get(e["secretRef"]["name"], {})
                   for e in container.get("envFrom", []) if "secretRef" in e]
        if "JWT_SECRET" in env_names(container) or any("JWT_SECRET" in s.get("stringData", {}) for s in secrets):
            holders.add(service)
            assert workload["kind"] == "Deployment", workload["metadata"]["name"]  # no migration Job needs it
    assert holders == {"hold-service", "payment-service", "voucher-service"}
    [payment_api] = [c for w, c in containers(manifests) if w["metadata"]["name"] == "ticketing-payment-service-api"]
    [api_key] = [e for e in payment_api["env"] if e["name"] == "STRIPE_API_KEY"]
    assert api_key["valueFrom"]["secretKeyRef"] == {"name": "ticketing-stripe", "key": "api-key"}


def test_trusted_proxies_are_none_by_default_and_the_ingress_controller_with_it(helm: str) -> None:
    config = by_kind(render(helm, "--set", f"jwt.value={KEY}"), "ConfigMap")["ticketing-hold-service"]["data"]
    assert config["TRUSTED_PROXIES"] == ""
    assert "Ingress" not in {m["kind"] for m in render(helm, "--set", f"jwt.value={KEY}")}
    proc = run([helm, "template", "ticketing", str(CHART), "--set", f"jwt.value={KEY}",
                "--set", "ingress.enabled=true"], check=False)
    assert proc.returncode != 0 and "ingress.controllerCidrs" in proc.stderr

    manifests = render(helm, *INGRESS, "--set", "trustedProxies={192.0.2.7}")
    config = by_kind(manifests, "ConfigMap")["ticketing-hold-service"]["data"]
    assert config["TRUSTED_PROXIES"] == "10.42.0.0/16,fd00:42::/56,192.0.2.7"
    ingresses = by_kind(manifests, "Ingress")
    for ingress in ingresses.values():
        kubernetes_validate.validate(ingress, "1.33.0", strict=True)
    routes = {p["path"]: p["backend"]["service"]["name"] for i in ingresses.values()
              for p in i["spec"]["rules"][0]["http"]["paths"]}
    assert routes == {"/holds/[^/]+/checkout": "ticketing-payment-service-api",
                      "/payments": "ticketing-payment-service-api",  # the gateway's callback and /payments/{id}
                      "/vouchers/[^/]+/quote": "ticketing-voucher-service-api",
                      **{p: "ticketing-hold-service-api" for p in ("/showtimes", "/holds", "/queue", "/bookings",
                                                                   "/pages", "/showtimes/[0-9]+/seats/stream",
                                                                   "/checkins", "/tickets/public-key")}}
    stream = ingresses["ticketing-public-seat-map-stream"]["metadata"]["annotations"]
    assert stream["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(stream["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > 15  # past the heartbeat
    assert "nginx.ingress.kubernetes.io/proxy-buffering" not in ingresses["ticketing-public"]["metadata"]["annotations"]


@pytest.mark.parametrize("cidr", ["10.0.0.0/8,evil", "not-an-address"])
def test_the_schema_refuses_what_is_not_an_address(helm: str, cidr: str) -> None:
    proc = run([helm, "template", "ticketing", str(CHART), *INGRESS, "--set", f"trustedProxies={{{cidr}}}"],
               check=False)
    assert proc.returncode != 0 and "trustedProxies" in proc.stderr
