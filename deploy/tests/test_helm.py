"""The chart lints strictly, renders with the default, the external-infrastructure and the cluster-mode values,
every manifest is valid against the Kubernetes schema, and the rendered shape is what the issue asked for: every
role of every worker runs in some Deployment, each pod reads only its own service's secrets, APIs have Services,
probes, HPAs; every Deployment a PDB; migrations and topics run as hooks; in cluster mode two of every role on
different nodes, one of each kept through disruptions, the Redis Cluster's nodes, topics of 3 replicas."""

from __future__ import annotations

import importlib
from typing import Any

import kubernetes_validate
import pytest
import yaml
from deploy_support import CHART, CLUSTER_VALUES, EXTERNAL_VALUES, REPO, by_kind, containers, render, run

KUBERNETES_VERSION = "1.33.0"
# The default values name no JWT or contacts key, and a render without a cluster will not make one up
# (test_helm_trust.py): "default" names the Secrets a GitOps deployment keeps.
VALUES = {"default": ["--set", "jwt.existingSecret=ticketing-jwt",
                      "--set", "contacts.existingSecret=ticketing-contacts"],
          "external": ["-f", str(EXTERNAL_VALUES)],
          "cluster": ["-f", str(EXTERNAL_VALUES), "-f", str(CLUSTER_VALUES)]}
WORKER_MODULES = {service: f"{service.replace('-', '_')}.entrypoints.worker"
                  for service in ("hold-service", "payment-service", "voucher-service", "notifier")}


@pytest.fixture(scope="module", params=sorted(VALUES))
def manifests(request: pytest.FixtureRequest, helm: str) -> list[dict[str, Any]]:
    return render(helm, *VALUES[request.param])


@pytest.mark.parametrize("values", sorted(VALUES))
def test_lint_strict(helm: str, values: str) -> None:
    run([helm, "lint", "--strict", str(CHART), *VALUES[values]])


def test_the_schema_refuses_what_broke_every_pod(helm: str) -> None:
    proc = run([helm, "template", "t", str(CHART), "--set", "appEnv=prod"], check=False)
    assert proc.returncode != 0 and "/appEnv" in proc.stderr


def test_every_manifest_is_valid_kubernetes(manifests: list[dict[str, Any]]) -> None:
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    assert {m["kind"] for m in manifests} >= {"Deployment", "Service", "ConfigMap", "Job",
                                                 "HorizontalPodAutoscaler", "PodDisruptionBudget"}


def test_every_worker_role_runs_in_a_deployment(manifests: list[dict[str, Any]]) -> None:
    running: dict[str, set[str]] = {service: set() for service in WORKER_MODULES}
    for _, container in containers(manifests):
        args = container["args"]
        if args[:1] == ["ticketing-run"] and args[2] == "worker":
            running[args[1]] |= set(args[args.index("--roles") + 1].split(","))
    for service, module in WORKER_MODULES.items():
        worker = importlib.import_module(module)
        assert running[service] == set(getattr(worker, "ALL_ROLES", getattr(worker, "ROLES", ()))), service


def test_a_workers_liveness_follows_its_event_loop(manifests: list[dict[str, Any]]) -> None:
    """/healthz on the metrics port (ticketing.loop_health), not /metrics: a thread serves that one, and it
    answers while the event loop is stuck."""
    probed = 0
    for _, container in containers(manifests):
        args = container["args"]
        if args[:1] == ["ticketing-run"] and args[2] == "worker" and args[1] != "notifier":
            assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
            probed += 1
    assert probed >= 6


def test_each_pod_reads_only_its_own_secrets(manifests: list[dict[str, Any]]) -> None:
    owner: dict[str, str] = {}  # secret name -> the one service whose pods read it
    for workload, container in containers(manifests):
        service = workload["metadata"]["labels"]["app.kubernetes.io/name"]
        names = {e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e}
        names |= {e["valueFrom"]["secretKeyRef"]["name"] for e in container.get("env", []) if "valueFrom" in e}
        # Shared by design: the JWT key, one Redis, the ticket key (the notifier signs e-mailed tickets, hold-service
        # the same tickets in GET /bookings, and its door verifies them), the contacts key (the notifier sends it,
        # hold-service checks it).
        for name in names - {"ticketing-jwt", "ticketing-redis", "ticketing-qr", "ticketing-contacts"}:
            assert owner.setdefault(name, service) == service, f"{name} is read by {owner[name]} and {service}"
        for mount in workload["spec"]["template"]["spec"].get("volumes", []):
            assert "secret" not in mount or mount["secret"]["secretName"].endswith("cluster-ca-cert")


def test_apis_are_served_probed_and_autoscaled(manifests: list[dict[str, Any]]) -> None:
    deployments, services = by_kind(manifests, "Deployment"), by_kind(manifests, "Service")
    hpas, pdbs = by_kind(manifests, "HorizontalPodAutoscaler"), by_kind(manifests, "PodDisruptionBudget")
    for name in ("ticketing-hold-service-api", "ticketing-payment-service-api", "ticketing-voucher-service-api"):
        [container] = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz?check=postgres"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
        assert services[name]["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"]
        assert hpas[name]["spec"]["scaleTargetRef"]["name"] == name
        assert "replicas" not in deployments[name]["spec"]  # the HPA owns it
    assert set(pdbs) == set(deployments)
    for deployment in deployments.values():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        [container] = pod["containers"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]


def test_the_other_services_reach_hold_service_through_an_internal_api_of_its_own(helm: str) -> None:
    """A checkout's calls to hold-service go to pods the crowd's requests never reach: the same API in a
    Deployment of its own, behind a Service of its own that no Ingress routes to; null puts them back on the
    public one."""
    manifests = render(helm, *VALUES["default"], "--set", "ingress.enabled=true",
                       "--set", "ingress.controllerCidrs={10.42.0.0/16}")
    deployments, services = by_kind(manifests, "Deployment"), by_kind(manifests, "Service")
    inside, public = deployments["ticketing-hold-service-internal-api"], deployments["ticketing-hold-service-api"]
    [container] = inside["spec"]["template"]["spec"]["containers"]
    assert container["args"] == public["spec"]["template"]["spec"]["containers"][0]["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz?check=postgres"
    assert services["ticketing-hold-service-internal-api"]["spec"]["selector"] == inside["spec"]["selector"][
        "matchLabels"] != public["spec"]["selector"]["matchLabels"]
    hpa = by_kind(manifests, "HorizontalPodAutoscaler")["ticketing-hold-service-internal-api"]["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 4)
    payment = by_kind(manifests, "ConfigMap")["ticketing-payment-service"]["data"]
    assert payment["HOLD_SERVICE_URL"] == "http://ticketing-hold-service-internal-api:8001"
    routed = {p["backend"]["service"]["name"] for i in by_kind(manifests, "Ingress").values()
              for rule in i["spec"]["rules"] for p in rule["http"]["paths"]}
    assert "ticketing-hold-service-api" in routed and "ticketing-hold-service-internal-api" not in routed

    without = render(helm, *VALUES["default"], "--set", "services.hold-service.internalApi=null")
    assert not any("internal" in name for name in by_kind(without, "Deployment") | by_kind(without, "Service"))
    assert by_kind(without, "ConfigMap")["ticketing-payment-service"]["data"]["HOLD_SERVICE_URL"] == (
        "http://ticketing-hold-service-api:8001")


def test_migrations_then_topics_run_as_hooks(manifests: list[dict[str, Any]]) -> None:
    jobs = by_kind(manifests, "Job")
    weights = {name: int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) for name, job in jobs.items()}
    assert all(job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade" for job in jobs.values())
    migrations = {n for n in jobs if n.endswith("-migrate")}
    assert len(migrations) == 4 and all(weights[n] < weights["ticketing-topics"] for n in migrations)
    for name in migrations:
        [container] = jobs[name]["spec"]["template"]["spec"]["containers"]
        assert container["args"][2] == "migrate"

        assert {e["name"] for e in container["env"]} == {"LOG_LEVEL", "DATABASE_URL"}


def test_the_chart_deploys_the_release_s_image_unless_told_another(helm: str) -> None:
    manifests = render(helm, *VALUES["default"])
    release = (REPO / "VERSION").read_text().strip()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == release
    images = {c["image"] for _, c in containers(manifests)}
    assert images == {f"ghcr.io/example/ticketing-app:{release}"}
    labels = {m["metadata"]["labels"]["app.kubernetes.io/version"] for m in manifests if m["kind"] == "Deployment"}
    assert labels == {release}
    pinned = render(helm, *VALUES["default"], "--set", "image.tag=9.9.9")
    assert {c["image"] for _, c in containers(pinned)} == {"ghcr.io/example/ticketing-app:9.9.9"}


def test_the_topics_job_sets_the_retention_of_the_topics_and_their_dlqs(manifests: list[dict[str, Any]]) -> None:
    [topics] = by_kind(manifests, "Job")["ticketing-topics"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in topics["env"]}
    assert (env["KAFKA_TOPIC_RETENTION_HOURS"], env["KAFKA_DLQ_RETENTION_HOURS"]) == ("336", "720")
    assert topics["args"][-1] == "topics"  # `ticketing topics`: it sets them on topics already there too


def test_cluster_mode_runs_two_of_every_role_apart_and_keeps_one_up(helm: str) -> None:
    manifests = render(helm, *VALUES["cluster"])
    deployments, pdbs = by_kind(manifests, "Deployment"), by_kind(manifests, "PodDisruptionBudget")
    hpas = by_kind(manifests, "HorizontalPodAutoscaler")
    for name, deployment in deployments.items():
        replicas = hpas[name]["spec"]["minReplicas"] if name in hpas else deployment["spec"]["replicas"]
        assert replicas >= 2, f"{name} runs alone"
        assert replicas - pdbs[name]["spec"]["maxUnavailable"] >= 1, f"a disruption may take every {name}"
        assert pdbs[name]["spec"]["selector"] == deployment["spec"]["selector"]
        spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        by_node = [c for c in spread if c["topologyKey"] == "kubernetes.io/hostname"]
        assert by_node and by_node[0]["whenUnsatisfiable"] == "DoNotSchedule" and by_node[0]["maxSkew"] == 1
        assert by_node[0]["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    configs = by_kind(manifests, "ConfigMap")
    nodes = {name: c["data"].get("REDIS_CLUSTER_NODES") for name, c in configs.items()}
    assert nodes["ticketing-hold-service"] and nodes["ticketing-hold-service"] == nodes["ticketing-voucher-service"]
    assert not nodes["ticketing-payment-service"] and not nodes["ticketing-notifier"]  # they use no Redis
    [topics] = by_kind(manifests, "Job")["ticketing-topics"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in topics["env"]}
    assert (env["KAFKA_TOPIC_REPLICATION_FACTOR"], env["KAFKA_TOPIC_MIN_INSYNC_REPLICAS"]) == ("3", "2")


def test_a_malformed_redis_cluster_node_list_is_refused(helm: str) -> None:
    proc = run([helm, "template", "t", str(CHART), "--set", "redis.clusterNodes=redis-0"], check=False)
    assert proc.returncode != 0 and "/redis/clusterNodes" in proc.stderr
