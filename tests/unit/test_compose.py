"""docker-compose.yml is a valid Compose file and keeps the promises the README and the Quick start make.

The schema is the Compose Specification's own, shipped in `docker/compose-spec.json`
(source and version in `docker/README.md`), so this runs without Docker or a network.
"""

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
JOBPOST_IMAGE = "jobpost:local"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict[str, Any]]:
    return compose["services"]


@pytest.fixture(scope="module")
def specification() -> jsonschema.Draft7Validator:
    schema = json.loads((ROOT / "docker" / "compose-spec.json").read_text())
    # The schema declares draft-07 under a URI that jsonschema does not recognise: name the draft.
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def published(port: str | int | dict[str, Any]) -> tuple[str, str]:
    """(host ip, host port) of a `ports` entry; an empty ip means every interface."""
    if isinstance(port, dict):
        return str(port.get("host_ip", "")), str(port.get("published", ""))
    parts = str(port).rsplit(":", 2)
    if len(parts) == 3:
        return parts[0], parts[1]
    return "", parts[0] if len(parts) == 2 else ""


def test_the_file_follows_the_compose_specification(compose, specification):
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in specification.iter_errors(compose)]
    assert errors == []


def test_the_specification_catches_a_misspelt_key(compose, specification):
    api = {**compose["services"]["api"], "port": ["127.0.0.1:8000:8000"]}
    assert not specification.is_valid({**compose, "services": {**compose["services"], "api": api}})


def test_the_api_has_no_default_token(services):
    token = services["api"]["environment"]["JOBPOST_API_TOKENS"]
    assert re.fullmatch(r"\$\{JOBPOST_API_TOKENS:\?[^}]+\}", token), token


def test_every_published_port_is_bound_to_loopback(services):
    for name in ("elasticsearch", "kibana", "sandbox", "api"):
        assert services[name].get("ports"), f"{name} publishes no port"
    elsewhere = [
        (name, port)
        for name, service in services.items()
        for port in service.get("ports", [])
        if published(port)[0] != "127.0.0.1"
    ]
    assert elsewhere == []


def test_consumer_and_indexer_metrics_are_served_on_their_published_ports(services):
    for name, prefix in (
        ("linkedin", "JOBPOST_CONSUMER"),
        ("indeed", "JOBPOST_CONSUMER"),
        ("indexer", "JOBPOST_INDEXER"),
    ):
        env = services[name]["environment"]
        assert env[f"{prefix}_METRICS_HOST"] == "0.0.0.0"
        ports = [published(port) for port in services[name]["ports"]]
        assert ("127.0.0.1", str(env[f"{prefix}_METRICS_PORT"])) in ports


def test_topics_builds_the_product_image_the_others_run(services):
    builders = sorted(name for name, s in services.items() if "build" in s)
    assert builders == ["sandbox", "topics"]
    assert services["topics"]["image"] == JOBPOST_IMAGE
    assert services["topics"]["build"] == "."  # the Dockerfile's default target: the product alone
    runners = {
        name: s for name, s in services.items() if s.get("image") == JOBPOST_IMAGE and name != "topics"
    }
    assert set(runners) == {"api", "sequencer", "linkedin", "indeed", "indexer", "webhooks"}
    assert all(s["pull_policy"] == "never" for s in runners.values())


def test_the_sandbox_builds_the_images_sandbox_target_under_a_name_of_its_own(services):
    sandbox = services["sandbox"]
    assert sandbox["build"] == {"context": ".", "target": "sandbox"}
    assert sandbox["image"] not in (JOBPOST_IMAGE, None)
    assert sandbox["pull_policy"] == "build"
    assert sandbox["command"][0] == "sandbox"
    assert re.search(r"^FROM \S+ AS sandbox$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)


def test_kafka_and_elasticsearch_keep_their_data_in_named_volumes(compose, services):
    kafka = services["kafka"]
    assert "kafka-data:/var/lib/kafka/data" in kafka["volumes"]
    assert kafka["environment"]["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"
    assert "elasticsearch-data:/usr/share/elasticsearch/data" in services["elasticsearch"]["volumes"]
    assert {"kafka-data", "elasticsearch-data"} <= set(compose["volumes"])


def test_the_data_view_is_imported_once_kibana_is_healthy(services):
    assert "curl" in " ".join(services["kibana"]["healthcheck"]["test"])
    assert "/api/status" in " ".join(services["kibana"]["healthcheck"]["test"])
    data_view = services["kibana-data-view"]
    assert data_view["depends_on"]["kibana"]["condition"] == "service_healthy"
    assert data_view.get("restart", "no") == "no"


def test_kafka_keeps_its_healthcheck(services):
    assert services["kafka"]["healthcheck"]["test"]
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"


def test_the_scaled_profile_can_switch_the_embedded_sequencer_off(services):
    assert services["sequencer"]["profiles"] == ["scaled"]
    assert services["api"]["environment"]["JOBPOST_API_EMBEDDED_SEQUENCER"] == (
        "${JOBPOST_API_EMBEDDED_SEQUENCER:-true}"
    )


def test_the_registry_runs_with_its_profile_and_every_service_can_be_pointed_at_it(compose, services):
    registry = services["registry"]
    assert registry["profiles"] == ["registry"]
    assert registry["environment"]["APICURIO_STORAGE_KIND"] == "kafkasql"  # ids outlive the container
    assert registry["depends_on"]["kafka"]["condition"] == "service_healthy"
    runners = [name for name, s in services.items() if s.get("image") == JOBPOST_IMAGE and name != "topics"]
    for name in runners:
        env = services[name].get("environment", {})
        assert env.get("JOBPOST_SCHEMA_REGISTRY_URL") == "${JOBPOST_SCHEMA_REGISTRY_URL:-}", name
        dependency = services[name]["depends_on"]["registry"]
        assert dependency == {"condition": "service_started", "required": False}, name
