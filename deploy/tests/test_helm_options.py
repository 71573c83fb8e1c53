"""The chart's optional parts, each off (the default) and on: `helm lint --strict` and `helm template` pass and
every manifest is valid Kubernetes (the Prometheus operator's kinds, which kubernetes-validate does not know,
are checked by shape and the alert rules by promtool). What each part promises: a ServiceAccount per service
and no API token in any pod; a deadline on every Job and a NOTES.txt that matches the Jobs' delete policy;
nameOverride/fullnameOverride rename everything consistently; image.digest pins every container; the
NetworkPolicies let each service reach exactly what it uses; the `helm test` Pod's check passes and fails as
it should; the alert rules are scoped to the release and fire for it, not for another team's series; the
database connection budget stops the render when the HPAs could exceed it; the dev tools are off by default,
run from the dev image when on, and refused with appEnv production."""

from __future__ import annotations

import http.server
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from deploy_support import CHART, EXTERNAL_VALUES, REPO, by_kind, render, run

KUBERNETES_VERSION = "1.33.0"
BASE = ["--set", "jwt.existingSecret=ticketing-jwt", "--set", "contacts.existingSecret=ticketing-contacts"]
DIGEST = "sha256:" + "ab" * 32
OPTIONS = {
    "default": [],
    "network-policies": ["--set", "networkPolicy.enabled=true"],
    "monitoring": ["--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true",
                   "--set", "monitoring.grafanaDashboard.enabled=true"],
    "digest": ["--set", f"image.digest={DIGEST}"],
    "names": ["--set", "fullnameOverride=shop"],
    "no-tests-no-accounts": ["--set", "tests.enabled=false", "--set", "serviceAccount.create=false"],
    "budget": ["--set", "database.maxConnections=2000"],
    "dev-tools": ["--set", "devTools.enabled=true", "--set", "appEnv=test"],
    "external-all": ["-f", str(EXTERNAL_VALUES), "--set", "networkPolicy.enabled=true",
                     "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true",
                     "--set", "monitoring.grafanaDashboard.enabled=true"],
}
OPERATOR_KINDS = {"PodMonitor", "PrometheusRule"}
SERVICES = ("hold-service", "payment-service", "voucher-service", "notifier")


def pods(manifests: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(manifest, pod spec) of every Deployment, Job and bare Pod."""
    found = [(m, m["spec"]["template"]["spec"]) for m in manifests if m["kind"] in ("Deployment", "Job")]
    return found + [(m, m["spec"]) for m in manifests if m["kind"] == "Pod"]


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_lints_renders_and_validates_with_each_option(helm: str, option: str) -> None:
    args = [*(BASE if option != "external-all" else []), *OPTIONS[option]]
    run([helm, "lint", "--strict", str(CHART), *args])
    manifests = render(helm, *args)
    for manifest in manifests:
        if manifest["kind"] not in OPERATOR_KINDS:
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
        else:
            assert manifest["apiVersion"] == "monitoring.coreos.com/v1" and manifest["spec"]
    kinds = {m["kind"] for m in manifests}
    assert ("NetworkPolicy" in kinds) == (option in ("network-policies", "external-all"))
    assert (kinds >= OPERATOR_KINDS) == (option in ("monitoring", "external-all"))
    assert ("Pod" in kinds) == (option != "no-tests-no-accounts")


def test_every_pod_has_an_account_of_its_own_and_no_token(helm: str) -> None:
    manifests = render(helm, *BASE)
    accounts = by_kind(manifests, "ServiceAccount")
    assert set(accounts) == {f"ticketing-{s}" for s in SERVICES} | {"ticketing-hooks"}
    assert all(a["automountServiceAccountToken"] is False for a in accounts.values())
    for manifest, pod in pods(manifests):
        assert pod["automountServiceAccountToken"] is False, manifest["metadata"]["name"]
        service = manifest["metadata"]["labels"]["app.kubernetes.io/name"]
        hook = "helm.sh/hook" in manifest["metadata"].get("annotations", {})
        assert pod["serviceAccountName"] == ("ticketing-hooks" if hook else f"ticketing-{service}")
    # The hooks' account exists before the first hook runs, and for `helm test`.
    hooks = accounts["ticketing-hooks"]["metadata"]["annotations"]
    assert set(hooks["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade", "test"}
    weights = [int(m["metadata"]["annotations"].get("helm.sh/hook-weight", 0)) for m, _ in pods(manifests)
               if "helm.sh/hook" in m["metadata"].get("annotations", {})]
    assert int(hooks["helm.sh/hook-weight"]) < min(weights)
    for _, pod in pods(render(helm, *BASE, "--set", "serviceAccount.create=false")):
        assert pod["serviceAccountName"] == "default" and pod["automountServiceAccountToken"] is False


def rendered_notes(helm: str, tmp_path: Path, *args: str) -> str:
    """NOTES.txt as `helm install` prints it (which needs a cluster): rendered with `tpl` by a copy of the
    chart, into a ConfigMap."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    shutil.copy(chart / "templates" / "NOTES.txt", chart / "files" / "NOTES.txt")
    (chart / "templates" / "notes-as-configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"
        "data:\n  notes: {{ tpl (.Files.Get \"files/NOTES.txt\") . | quote }}\n")
    out = run([helm, "template", "ticketing", str(chart), *args, "--show-only", "templates/notes-as-configmap.yaml"])
    return str(yaml.safe_load(out.stdout)["data"]["notes"])


def test_every_job_has_a_deadline_and_the_notes_tell_what_is_kept(helm: str, tmp_path: Path) -> None:
    jobs = by_kind(render(helm, *BASE), "Job")
    assert len(jobs) == 5 and all(j["spec"]["activeDeadlineSeconds"] > 0 for j in jobs.values())
    policies = {j["metadata"]["annotations"]["helm.sh/hook-delete-policy"] for j in jobs.values()}
    assert policies == {"before-hook-creation,hook-succeeded"}
    notes = rendered_notes(helm, tmp_path, *BASE, "-n", "shop")
    # A succeeded Job is deleted: the notes say so, and point at a failed one's logs, which are kept.
    assert "deleted once they succeed" in notes and "A failed one is kept" in notes
    assert "kubectl -n shop logs job/ticketing-topics" in notes and "helm test ticketing -n shop" in notes


def test_name_overrides_rename_everything_consistently(helm: str) -> None:
    default = {m["metadata"]["name"] for m in render(helm, *BASE)}
    assert "ticketing-hold-service-api" in default  # a release called ticketing keeps its names
    for args, prefix in ((["--set", "fullnameOverride=shop"], "shop-"),
                         (["--set", "nameOverride=tix"], "ticketing-tix-")):
        manifests = render(helm, *BASE, "--set", "ingress.enabled=true",
                           "--set", "ingress.controllerCidrs={10.42.0.0/16}", "--set", "networkPolicy.enabled=true",
                           *args)
        names = {m["metadata"]["name"] for m in manifests}
        assert all(n.startswith(prefix) for n in names), sorted(n for n in names if not n.startswith(prefix))
        services = set(by_kind(manifests, "Service"))
        config = by_kind(manifests, "ConfigMap")[f"{prefix}payment-service"]["data"]
        assert config["HOLD_SERVICE_URL"] == f"http://{prefix}hold-service-internal-api:8001"
        backends = {p["backend"]["service"]["name"] for i in by_kind(manifests, "Ingress").values()
                    for p in i["spec"]["rules"][0]["http"]["paths"]}
        assert backends <= services
        for manifest, pod in pods(manifests):
            for env in pod["containers"][0].get("envFrom", []):
                ref = env.get("configMapRef") or env.get("secretRef")
                assert ref["name"].startswith(prefix), manifest["metadata"]["name"]


def test_a_digest_pins_every_container(helm: str) -> None:
    for _, pod in pods(render(helm, *BASE, *OPTIONS["digest"])):
        assert [c["image"] for c in pod["containers"]] == [f"ghcr.io/example/ticketing-app@{DIGEST}"]
    proc = run([helm, "template", "t", str(CHART), *BASE, "--set", "image.digest=latest"], check=False)
    assert proc.returncode != 0 and "/image/digest" in proc.stderr


def test_the_dev_tools_are_off_by_default_and_run_from_the_dev_image_when_on(helm: str) -> None:
    default = by_kind(render(helm, *BASE), "Deployment")
    assert not {"ticketing-gateway-simulator", "ticketing-smtp-sink"} & set(default)
    manifests = render(helm, *BASE, *OPTIONS["dev-tools"])
    deployments = by_kind(manifests, "Deployment")
    version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    for name, deployment in deployments.items():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        dev = name in ("ticketing-gateway-simulator", "ticketing-smtp-sink")
        assert container["image"] == f"ghcr.io/example/ticketing-app{'-dev' if dev else ''}:{version}", name
    simulator = deployments["ticketing-gateway-simulator"]["spec"]["template"]["spec"]["containers"][0]
    sink = deployments["ticketing-smtp-sink"]["spec"]["template"]["spec"]["containers"][0]
    assert simulator["args"] == ["ticketing-run", "gateway-simulator", "api"]
    assert sink["args"][:3] == ["ticketing-run", "smtp-sink", "serve"]
    env = {e["name"]: e for e in simulator["env"]}
    assert env["SIM_WEBHOOK_URL"]["value"] == "http://ticketing-payment-service-api:8002/payments/callback"
    assert {"STRIPE_API_KEY", "STRIPE_WEBHOOK_SECRET"} <= set(env) and "JWT_SECRET" not in env
    assert {"ticketing-gateway-simulator", "ticketing-smtp-sink"} <= set(by_kind(manifests, "Service"))
    refused = run([helm, "template", "t", str(CHART), *BASE, "--set", "devTools.enabled=true"], check=False)
    assert refused.returncode != 0 and "never production" in refused.stderr


# --- NetworkPolicies ---------------------------------------------------------------------------------------

def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    matched = all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "NotIn", expression  # the one kind the chart writes
        matched = matched and labels.get(expression["key"]) not in expression["values"]
    return matched


def reachability(manifests: list[dict[str, Any]]) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, int]]]:
    """What the policies allow between the release's pods: (from service, to service, port) allowed by the
    sender's egress, and by the receiver's ingress (services named by app.kubernetes.io/name; hold-service's
    internal API pods as hold-service/internal-api)."""
    policies = by_kind(manifests, "NetworkPolicy").values()
    apis = {"api": "", "internal-api": "/internal-api"}
    pod_labels = {m["metadata"]["labels"]["app.kubernetes.io/name"] + apis[m["metadata"]["labels"][
                      "app.kubernetes.io/component"]]: m["spec"]["template"]["metadata"]["labels"]
                  for m in manifests if m["kind"] == "Deployment" and m["metadata"]["labels"].get(
                      "app.kubernetes.io/component") in apis}
    pod_labels["ticketing"] = {"app.kubernetes.io/name": "ticketing", "app.kubernetes.io/instance": "ticketing",
                               "app.kubernetes.io/component": "test"}
    for service in SERVICES:
        pod_labels.setdefault(service, {"app.kubernetes.io/name": service, "app.kubernetes.io/instance": "ticketing"})
    egress, ingress = set(), set()
    for policy in policies:
        spec = policy["spec"]
        selected = [s for s, labels in pod_labels.items() if _selects(spec["podSelector"], labels)]
        for rule in spec.get("egress", []):
            for peer in rule.get("to", []):
                if "podSelector" in peer and "namespaceSelector" not in peer:
                    egress |= {(s, t, p["port"]) for s in selected for t, labels in pod_labels.items()
                               if _selects(peer["podSelector"], labels) for p in rule["ports"]}
        for rule in spec.get("ingress", []):
            for peer in rule.get("from", []):
                if "podSelector" in peer and "namespaceSelector" not in peer:
                    ingress |= {(f, s, p["port"]) for s in selected for f, labels in pod_labels.items()
                                if _selects(peer["podSelector"], labels) for p in rule["ports"]}
    return egress, ingress


def test_network_policies_allow_what_each_service_uses_and_nothing_else(helm: str) -> None:
    manifests = render(helm, *BASE, *OPTIONS["network-policies"])
    policies = by_kind(manifests, "NetworkPolicy")
    # Every pod the release runs is selected by a policy: none is left open.
    for manifest, _ in pods(manifests):
        labels = manifest["spec"]["template"]["metadata"]["labels"] if manifest["kind"] != "Pod" \
            else manifest["metadata"]["labels"]
        assert any(_selects(p["spec"]["podSelector"], labels) for p in policies.values()), manifest["metadata"]
    # The other services call hold-service at its internal API only; the notifier for the buyers' contacts.
    calls = {("payment-service", "hold-service/internal-api", 8001), ("payment-service", "voucher-service", 8003),
             ("voucher-service", "payment-service", 8002), ("notifier", "hold-service/internal-api", 8001),
             *(("ticketing", s, port) for s, port in (("hold-service", 8001), ("hold-service/internal-api", 8001),
                                                       ("payment-service", 8002), ("voucher-service", 8003)))}
    egress, ingress = reachability(manifests)
    assert egress == calls and ingress == calls
    # The ingress controller reaches the public API's pods, never the internal API's; Prometheus both.
    controller = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    assert controller in policies["ticketing-hold-service"]["spec"]["ingress"][0]["from"]
    [internal_in] = policies["ticketing-hold-service-internal-api"]["spec"]["ingress"]
    assert controller not in internal_in["from"] and len(internal_in["from"]) == 4  # Prometheus, 2 callers, test
    def outside(rule: dict[str, Any]) -> bool:  # not to the release's own pods
        return not any("podSelector" in peer and "namespaceSelector" not in peer for peer in rule.get("to", []))
    infra = {name: {p["port"] for rule in policy["spec"]["egress"] if outside(rule) for p in rule["ports"]}
             for name, policy in policies.items()}
    assert infra == {"ticketing-hold-service": {53, 5432, 9092, 6379},
                     "ticketing-hold-service-internal-api": {53, 5432, 9092, 6379},
                     "ticketing-payment-service": {53, 5432, 9092, 443},
                     "ticketing-voucher-service": {53, 5432, 9092, 6379},
                     "ticketing-notifier": {53, 5432, 9092, 587},
                     "ticketing-topics": {53, 9092}, "ticketing-test": {53}}
    # Prometheus reaches the workers' metrics ports (and the APIs' ports, where they serve /metrics).
    notifier_in = policies["ticketing-notifier"]["spec"]["ingress"]
    assert [[p["port"] for p in r["ports"]] for r in notifier_in] == [[8004]]
    assert notifier_in[0]["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]


def test_network_policies_take_the_infrastructures_addresses(helm: str) -> None:
    manifests = render(helm, *BASE, "--set", "networkPolicy.enabled=true",
                       "--set", "networkPolicy.postgres.to[0].ipBlock.cidr=10.9.0.0/24",
                       "--set", "networkPolicy.extraEgress.hold-service[0].ports[0].port=443",
                       "--set", "networkPolicy.extraEgress.hold-service[0].to[0].ipBlock.cidr=203.0.113.0/24")
    hold = by_kind(manifests, "NetworkPolicy")["ticketing-hold-service"]["spec"]["egress"]
    assert {"to": [{"ipBlock": {"cidr": "10.9.0.0/24"}}], "ports": [{"port": 5432, "protocol": "TCP"}]} in hold
    assert {"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}], "ports": [{"port": 443}]} in hold


# --- helm test -------------------------------------------------------------------------------------------

class _Answers(http.server.BaseHTTPRequestHandler):
    failing: set[str] = set()

    def do_GET(self) -> None:
        self.send_response(503 if self.path in self.failing else 200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_the_helm_test_pod_checks_readiness_and_a_read_of_each_api(helm: str, server: str) -> None:
    [pod] = by_kind(render(helm, *BASE), "Pod").values()
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    [container] = pod["spec"]["containers"]
    python, flag, script, *urls = container["args"]
    assert (python, flag) == ("python", "-c")
    assert urls == [f"http://ticketing-{s}:{p}{path}" for s, p in (("hold-service-api", 8001),
                                                                    ("hold-service-internal-api", 8001),
                                                                    ("payment-service-api", 8002),
                                                                    ("voucher-service-api", 8003))
                    for path in ("/readyz?check=postgres", "/showtimes" if s.startswith("hold") else "/openapi.json")]
    local = [re.sub(r"^http://[^/]+", server, u) for u in urls]
    assert subprocess.run([sys.executable, "-c", script, *local], capture_output=True).returncode == 0
    _Answers.failing = {"/readyz?check=postgres"}
    try:  # a dependency down: 503 at every try (10 tries, 3 s apart: shortened by patching sleep)
        fast = script.replace("time.sleep(3)", "time.sleep(0)")
        proc = subprocess.run([sys.executable, "-c", fast, *local], capture_output=True, text=True)
    finally:
        _Answers.failing = set()
    assert proc.returncode == 1 and proc.stdout.count("FAILED") == 4


# --- monitoring ------------------------------------------------------------------------------------------

def _rule_groups(helm: str, *args: str) -> dict[str, Any]:
    manifests = render(helm, *BASE, *OPTIONS["monitoring"], "-n", "shop", *args)
    [rule] = by_kind(manifests, "PrometheusRule").values()
    return rule["spec"]


def test_the_chart_files_are_current() -> None:
    proc = subprocess.run([sys.executable, "deploy/helm/chart_files.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_alert_expression_is_scoped_to_the_release(helm: str) -> None:
    scope = '{namespace="shop",job="ticketing"'
    groups = _rule_groups(helm)
    source = yaml.safe_load((REPO / "deploy" / "observability" / "alerts.yaml").read_text())
    assert [r["alert"] for g in groups["groups"] for r in g["rules"]] == \
        [r["alert"] for g in source["groups"] for r in g["rules"]]
    headings = set(re.findall(r"^### (\w+)", (REPO / "docs" / "operations.md").read_text(), re.MULTILINE))
    for group in groups["groups"]:
        for rule in group["rules"]:
            expr = rule["expr"]
            # Each selector's metric name (the words before `{` or a bare name not followed by `(`).
            names = set(re.findall(r"([a-z_:][a-z0-9_:]*)\{", expr))
            assert names and all(expr.count(f"{n}{{") == expr.count(f"{n}{scope}") for n in names), expr
            assert "__SCOPE__" not in expr
            url = rule["annotations"]["runbook_url"]
            assert url.startswith("https://github.com/example/ticketing/blob/main/docs/operations.md#")
            assert url.split("#")[1] in {h.lower() for h in headings}, url
    up = next(r for g in groups["groups"] for r in g["rules"] if r["alert"] == "ScrapeTargetDown")
    assert up["expr"] == 'up{namespace="shop",job="ticketing"} == 0'
    custom = _rule_groups(helm, "--set", 'monitoring.prometheusRule.scope=kubernetes_namespace="prod"')
    assert 'up{kubernetes_namespace="prod"} == 0' in [r["expr"] for g in custom["groups"] for r in g["rules"]]
    # Without the chart's PodMonitor the default scope's job label would match nothing: the render asks for one.
    proc = run([helm, "template", "t", str(CHART), *BASE, "--set", "monitoring.prometheusRule.enabled=true"],
               check=False)
    assert proc.returncode != 0 and "needs monitoring.prometheusRule.scope" in proc.stderr


def test_the_scoped_rules_pass_promtool_and_fire_only_for_the_release(helm: str, promtool: str,
                                                                      tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(_rule_groups(helm)))
    out = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    ours, theirs = 'namespace="shop",job="ticketing"', 'namespace="other",job="their-app"'
    server_errors = {
        "summary": "hold-service: more than 1 % of requests answered 5xx (503: a dependency is down)",
        "runbook": "/readyz of the service names the dependency; the logs carry the request id.",
        "runbook_url": "https://github.com/example/ticketing/blob/main/docs/operations.md#servererrors"}
    tests = {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            # Another team's target down and their 5xx in the same Prometheus: no alert of ours.
            {"series": f'up{{{theirs},instance="x:80"}}', "values": "0x20"},
            {"series": f'ticketing_http_requests_total{{{theirs},service="shop-api",status="500"}}',
             "values": "0+60x20"},
            {"series": f'ticketing_http_requests_total{{{theirs},service="shop-api",status="200"}}',
             "values": "0+60x20"},
            # Ours: hold-service answers 5 % 5xx; a worker's scrape fails.
            {"series": f'up{{{ours},instance="10.0.0.7:9100"}}', "values": "0x20"},
            {"series": f'ticketing_http_requests_total{{{ours},service="hold-service",status="503"}}',
             "values": "0+3x20"},
            {"series": f'ticketing_http_requests_total{{{ours},service="hold-service",status="200"}}',
             "values": "0+57x20"},
        ],
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "ScrapeTargetDown", "exp_alerts": [{
                "exp_labels": {"severity": "ticket", "namespace": "shop", "job": "ticketing",
                               "instance": "10.0.0.7:9100"},
                "exp_annotations": {
                    "summary": "10.0.0.7:9100 (ticketing) does not answer Prometheus' scrape",
                    "runbook": "docs/operations.md, Periodic jobs: a worker's /healthz on its metrics port says "
                               "whether its event loop runs.",
                    "runbook_url": "https://github.com/example/ticketing/blob/main/docs/operations.md"
                                   "#scrapetargetdown"}}]},
            {"eval_time": "10m", "alertname": "ServerErrors", "exp_alerts": [{
                "exp_labels": {"severity": "page", "service": "hold-service"}, "exp_annotations": server_errors}]},
        ]}]}
    path = tmp_path / "alerts_test.yaml"
    path.write_text(yaml.safe_dump(tests))
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_dashboard_configmap_is_labelled_for_grafanas_sidecar(helm: str) -> None:
    manifests = render(helm, *BASE, *OPTIONS["monitoring"])
    dashboard = by_kind(manifests, "ConfigMap")["ticketing-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    source = (REPO / "deploy" / "observability" / "grafana-dashboard.json").read_text()
    assert dashboard["data"]["ticketing-platform.json"] == source.strip()
    [monitor] = by_kind(manifests, "PodMonitor").values()
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/instance"  # the job label the rules' scope names
    assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} == {"http", "metrics"}
    ports = {p["name"] for m in manifests if m["kind"] == "Deployment"
             for p in m["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports == {"http", "metrics"}


# --- the database connection budget ----------------------------------------------------------------------

def test_the_autoscalers_may_not_outgrow_the_databases_connections(helm: str) -> None:
    # The defaults: APIs 40 + 4 (hold-service's internal one) + 10 + 20 pods x 20, nine worker Deployments of 1-2
    # pods x 20, the notifier 2 x 5; sessions of their own: 44 seat-map feeds (LISTEN) and 2 + 2 relays (advisory
    # lock).
    render(helm, *BASE, "--set", "database.maxConnections=1838")
    proc = run([helm, "template", "t", str(CHART), *BASE, "--set", "database.maxConnections=1837"], check=False)
    assert proc.returncode != 0 and "may open 1838 connections" in proc.stderr
    assert "hold-service internal-api 4 pods x 1 processes x 20 + 1 LISTEN" in proc.stderr
    assert "hold-service api 40 pods x 1 processes x 20 + 1 LISTEN" in proc.stderr
    assert "hold-service relay 2 pods x 20 + 1 relay session" in proc.stderr
    # Fewer connections per process, more processes per pod: the same arithmetic.
    smaller = ["--set", "services.hold-service.env.DB_POOL_MAX=5",
               "--set", "services.hold-service.env.WEB_CONCURRENCY=2"]
    proc = run([helm, "template", "t", str(CHART), *BASE, *smaller, "--set", "database.maxConnections=1000"],
               check=False)
    assert proc.returncode != 0 and "may open 1367 connections" in proc.stderr  # 1275 + 88 feeds + 4 relays
