"""The chart's trust boundaries: the JWT key is never rendered anew (an existing Secret, a given value, or the
generated one read back from the cluster; a render that cannot read the cluster stops), only the services that
verify tokens hold it, the gateway's API key reaches payment-service, the buyers' contacts key is kept the same
way and held only where contacts are served (hold-service's APIs) and read (the notifier, sent to hold-service's
door), and TRUSTED_PROXIES is none by default and
the Ingress's controller when the Ingress is on (which routes customers, the door, the callback and the unbuffered
stream; test_helm_routes.py derives its routes from the services' OpenAPI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from deploy_support import CHART, by_kind, containers, render, run
from fake_kube import fake_cluster

KEY, CONTACTS = "k" * 40, "c" * 40
KEYS = ["--set", f"jwt.value={KEY}", "--set", f"contacts.value={CONTACTS}"]
INGRESS = [*KEYS, "--set", "ingress.enabled=true",
           "--set", "ingress.controllerCidrs={10.42.0.0/16,fd00:42::/56}"]


def jwt_keys(manifests: list[dict[str, Any]], name: str = "JWT_SECRET") -> list[str]:
    return [s["stringData"][name] for s in by_kind(manifests, "Secret").values() if name in s.get("stringData", {})]


def contacts_keys(manifests: list[dict[str, Any]]) -> list[str]:
    return jwt_keys(manifests, "CONTACTS_API_KEY")


def holders(manifests: list[dict[str, Any]], name: str) -> set[str]:
    """The workloads whose container gets `name` (env, or a Secret it reads whole), by their Deployment's name."""
    held = set()
    for workload, container in containers(manifests):
        secrets = [by_kind(manifests, "Secret").get(e["secretRef"]["name"], {})
                   for e in container.get("envFrom", []) if "secretRef" in e]
        if name in env_names(container) or any(name in s.get("stringData", {}) for s in secrets):
            held.add(workload["metadata"]["name"])
    return held


def secret_refs(manifests: list[dict[str, Any]], name: str) -> set[str]:
    return {e["valueFrom"]["secretKeyRef"]["name"] + "/" + e["valueFrom"]["secretKeyRef"]["key"]
            for _, c in containers(manifests) for e in c.get("env", []) if e["name"] == name}


def env_names(container: dict[str, Any]) -> set[str]:
    return {e["name"] for e in container.get("env", [])}


def test_a_render_that_cannot_read_the_cluster_never_makes_a_new_key(helm: str) -> None:
    proc = run([helm, "template", "ticketing", str(CHART)], check=False)
    assert proc.returncode != 0 and "jwt.existingSecret" in proc.stderr
    proc = run([helm, "template", "ticketing", str(CHART), "--set", f"jwt.value={KEY}"], check=False)
    assert proc.returncode != 0 and "contacts.existingSecret" in proc.stderr
    given = render(helm, *KEYS)
    assert (jwt_keys(given), contacts_keys(given)) == ([KEY], [CONTACTS])
    kept = render(helm, "--set", "jwt.existingSecret=vault-jwt", "--set", "jwt.key=token",
                  "--set", "contacts.existingSecret=vault-contacts", "--set", "contacts.key=api-key")
    assert jwt_keys(kept) == contacts_keys(kept) == []
    assert secret_refs(kept, "JWT_SECRET") == {"vault-jwt/token"}
    assert secret_refs(kept, "CONTACTS_API_KEY") == {"vault-contacts/api-key"}


def test_the_generated_key_is_read_back_from_the_cluster(helm: str, tmp_path: Path) -> None:
    installed = {"ticketing-jwt": {"JWT_SECRET": "kept-from-the-install-" * 2},
                 "ticketing-contacts": {"CONTACTS_API_KEY": "contacts-kept-from-the-install-" * 2}}
    with fake_cluster(installed, tmp_path / "a") as config:
        renders = [render(helm, "--dry-run=server", env={"KUBECONFIG": str(config)}) for _ in range(2)]
    assert [(jwt_keys(r), contacts_keys(r)) for r in renders] == [
        (["kept-from-the-install-" * 2], ["contacts-kept-from-the-install-" * 2])] * 2
    with fake_cluster({}, tmp_path / "b") as config:  # the install: nothing to read back yet
        first = render(helm, "--dry-run=server", env={"KUBECONFIG": str(config)})
    [generated], [contacts] = jwt_keys(first), contacts_keys(first)
    assert len(generated) == len(contacts) == 48 and generated != contacts
    for name in ("ticketing-jwt", "ticketing-contacts"):  # uninstall keeps them too
        assert by_kind(first, "Secret")[name]["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_only_the_services_that_verify_tokens_hold_the_key(helm: str) -> None:
    manifests = render(helm, *KEYS)
    workloads = {w["metadata"]["name"]: w for w, _ in containers(manifests)}
    held = holders(manifests, "JWT_SECRET")
    assert all(workloads[name]["kind"] == "Deployment" for name in held)  # no migration Job needs it
    assert {workloads[name]["metadata"]["labels"]["app.kubernetes.io/name"] for name in held} == {
        "hold-service", "payment-service", "voucher-service"}
    [payment_api] = [c for w, c in containers(manifests) if w["metadata"]["name"] == "ticketing-payment-service-api"]
    [api_key] = [e for e in payment_api["env"] if e["name"] == "STRIPE_API_KEY"]
    assert api_key["valueFrom"]["secretKeyRef"] == {"name": "ticketing-stripe", "key": "api-key"}


def test_trusted_proxies_are_none_by_default_and_the_ingress_controller_with_it(helm: str) -> None:
    config = by_kind(render(helm, *KEYS), "ConfigMap")["ticketing-hold-service"]["data"]
    assert config["TRUSTED_PROXIES"] == ""
    assert "Ingress" not in {m["kind"] for m in render(helm, *KEYS)}
    proc = run([helm, "template", "ticketing", str(CHART), *KEYS,
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


def test_the_notifier_reads_buyers_contacts_at_hold_services_door_with_a_key_only_the_two_hold(helm: str) -> None:
    manifests = render(helm, *KEYS)
    configs = by_kind(manifests, "ConfigMap")
    door = configs["ticketing-payment-service"]["data"]["HOLD_SERVICE_URL"]
    assert door == "http://ticketing-hold-service-internal-api:8001"
    assert configs["ticketing-notifier"]["data"]["CONTACTS_URL"] == door
    assert holders(manifests, "CONTACTS_API_KEY") == {  # hold-service's workers and the others never
        "ticketing-hold-service-api", "ticketing-hold-service-internal-api", "ticketing-notifier-worker"}
    assert secret_refs(manifests, "CONTACTS_API_KEY") == {"ticketing-contacts/CONTACTS_API_KEY"}

    public = by_kind(render(helm, *KEYS, "--set", "services.hold-service.internalApi=null"), "ConfigMap")
    assert public["ticketing-notifier"]["data"]["CONTACTS_URL"] == "http://ticketing-hold-service-api:8001"

    off = render(helm, "--set", f"jwt.value={KEY}", "--set", "contacts.enabled=false")  # no key asked for
    assert "CONTACTS_URL" not in by_kind(off, "ConfigMap")["ticketing-notifier"]["data"]
    assert holders(off, "CONTACTS_API_KEY") == set() and contacts_keys(off) == []

    own = render(helm, *KEYS, "--set", "services.notifier.env.CONTACTS_URL=http://hold.example:8001",
                 "--set", "services.notifier.secretRefs.CONTACTS_API_KEY.name=mine",
                 "--set", "services.notifier.secretRefs.CONTACTS_API_KEY.key=k")  # as an operator set them before
    assert by_kind(own, "ConfigMap")["ticketing-notifier"]["data"]["CONTACTS_URL"] == "http://hold.example:8001"
    [notifier] = [c for w, c in containers(own) if w["metadata"]["name"] == "ticketing-notifier-worker"]
    assert [e["valueFrom"]["secretKeyRef"]["name"] for e in notifier["env"] if e["name"] == "CONTACTS_API_KEY"] == [
        "mine"]


@pytest.mark.parametrize("cidr", ["10.0.0.0/8,evil", "not-an-address"])
def test_the_schema_refuses_what_is_not_an_address(helm: str, cidr: str) -> None:
    proc = run([helm, "template", "ticketing", str(CHART), *INGRESS, "--set", f"trustedProxies={{{cidr}}}"],
               check=False)
    assert proc.returncode != 0 and "trustedProxies" in proc.stderr
