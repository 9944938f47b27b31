"""The shipped Kubernetes manifests, validated offline: the Deployment and the Service
against the Kubernetes API schemas (``kubernetes-validate``, strict: an unknown field
fails), the PodMonitor against its CustomResourceDefinition's own schema (the Prometheus
Operator's, vendored under ``crd/``: ``kubernetes-validate`` has no schema for a custom
resource), with every field known to it.  And the Deployment's command is one the
launcher's own parser takes, its probes on the gate's routes and port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]  # no type information shipped
import pytest
from kubernetes_validate.utils import (  # type: ignore[import-untyped]
    SchemaNotFoundError,
    resources_from_file,
)

from vllm_evidence._gate.server import ROUTES
from vllm_evidence.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
CRD = Path(__file__).resolve().parent / "crd" / "podmonitors.monitoring.coreos.com.json"
#: The oldest Kubernetes release the manifests are checked against (and the newest
#: kubernetes-validate knows).
VERSIONS = ("1.29.0", kubernetes_validate.utils.latest_version())


def _resources() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        found.extend((path.name, resource) for resource in resources_from_file(str(path)))
    return found


def _kind(kind: str) -> list[dict[str, Any]]:
    return [r for _, r in _resources() if r["kind"] == kind]


def test_the_manifests_are_a_deployment_a_service_and_podmonitors() -> None:
    assert sorted((name, r["kind"]) for name, r in _resources()) == [
        ("deployment.yaml", "Deployment"),
        ("podmonitor.yaml", "PodMonitor"),
        ("podmonitor.yaml", "PodMonitor"),
        ("service.yaml", "Service"),
    ]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["Deployment", "Service"])
def test_core_resources_validate_strictly_against_the_api_schemas(kind: str, version: str) -> None:
    for resource in _kind(kind):
        kubernetes_validate.validate(resource, version, strict=True)


def test_strict_validation_is_not_vacuous() -> None:
    (deployment,) = _kind("Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["httpGet"]["paht"] = "/ready"  # a typo
    with pytest.raises(kubernetes_validate.ValidationError, match="paht"):
        kubernetes_validate.validate(deployment, VERSIONS[0], strict=True)


def test_kubernetes_validate_has_no_schema_for_the_podmonitor() -> None:
    """Why the CRD's own schema is used below."""
    with pytest.raises(SchemaNotFoundError):
        kubernetes_validate.validate(_kind("PodMonitor")[0], VERSIONS[0], strict=True)


def _crd() -> dict[str, Any]:
    crd: dict[str, Any] = json.loads(CRD.read_text(encoding="utf-8"))
    return crd


def test_the_vendored_crd_is_a_valid_crd() -> None:
    crd = _crd()
    kubernetes_validate.validate(crd, VERSIONS[-1], strict=True)
    assert crd["spec"]["names"]["kind"] == "PodMonitor"
    assert crd["spec"]["group"] == "monitoring.coreos.com"


def _schema(api_version: str) -> dict[str, Any]:
    crd = _crd()
    group, _, version = api_version.partition("/")
    assert group == crd["spec"]["group"]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


def unknown_fields(value: object, schema: dict[str, Any], where: str = "") -> list[str]:
    """Every field of ``value`` its structural schema does not declare (what the API
    server would prune silently): ``spec.podMetricsEndpoints[0].paht``."""
    found: list[str] = []
    if isinstance(value, dict) and "properties" in schema:
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return found
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{where}{key}")
            else:
                found.extend(unknown_fields(item, schema["properties"][key], f"{where}{key}."))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found.extend(unknown_fields(item, schema["items"], f"{where[:-1]}[{index}]."))
    return found


@pytest.mark.parametrize("index", [0, 1])
def test_each_podmonitor_validates_against_its_crd_schema(index: int) -> None:
    monitor = _kind("PodMonitor")[index]
    schema = _schema(monitor["apiVersion"])
    jsonschema.Draft7Validator(schema).validate(monitor)
    assert unknown_fields(monitor, schema) == []


def test_the_crd_checks_are_not_vacuous() -> None:
    monitor = _kind("PodMonitor")[0]
    schema = _schema(monitor["apiVersion"])
    monitor["spec"]["podMetricsEndpoints"][0]["paht"] = "/metrics"
    assert unknown_fields(monitor, schema) == ["spec.podMetricsEndpoints[0].paht"]
    monitor["spec"]["podMetricsEndpoints"][0]["interval"] = "15 seconds"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(monitor)


def test_the_deployment_runs_the_gate_and_probes_its_routes() -> None:
    (deployment,) = _kind("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["vllm-evidence", "launch"]
    args = build_parser().parse_args(command[1:])
    assert args.serve == ":9100"
    assert args.require == ["parallel", "capacity", "health_coverage"]
    child = args.command[1:] if args.command[0] == "--" else args.command
    assert child[:2] == ["vllm", "serve"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8000, "gate": 9100}
    assert child[child.index("--port") + 1] == str(ports["http"])
    readiness, liveness = container["readinessProbe"], container["livenessProbe"]
    assert (readiness["httpGet"]["path"], readiness["httpGet"]["port"]) == ("/ready", "gate")
    assert (liveness["httpGet"]["path"], liveness["httpGet"]["port"]) == ("/live", "gate")
    assert {readiness["httpGet"]["path"], liveness["httpGet"]["path"]} <= set(ROUTES)


def test_the_service_balances_the_api_only_and_the_monitors_scrape_each_pod() -> None:
    (service,) = _kind("Service")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]
    (deployment,) = _kind("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    gate, vllm = _kind("PodMonitor")
    assert gate["metadata"]["name"] == "vllm-evidence"  # the rules' GateDown job
    assert [(e["port"], e["path"]) for e in gate["spec"]["podMetricsEndpoints"]] == [
        ("gate", "/metrics")
    ]
    assert [(e["port"], e["path"]) for e in vllm["spec"]["podMetricsEndpoints"]] == [
        ("http", "/metrics")
    ]
    for monitor in (gate, vllm):
        assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
