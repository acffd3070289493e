"""The registry's settings and the client's requests (the registry itself is exercised for
real in tests/integration/runtime/test_schema_registry.py)."""

import base64

import httpx
import pytest

from runtime.schema_registry import RegistryClient, SchemaRegistryError, SchemaRegistrySettings


def test_without_a_url_there_is_no_registry(monkeypatch):
    monkeypatch.setenv("JOBPOST_SCHEMA_REGISTRY_URL", "")
    assert SchemaRegistrySettings().url is None


def test_the_password_is_a_secret(monkeypatch):
    monkeypatch.setenv("JOBPOST_SCHEMA_REGISTRY_URL", "http://registry:8080/apis/ccompat/v7/")
    monkeypatch.setenv("JOBPOST_SCHEMA_REGISTRY_USERNAME", "jobpost")
    monkeypatch.setenv("JOBPOST_SCHEMA_REGISTRY_PASSWORD", "s3cret")
    settings = SchemaRegistrySettings()
    assert settings.url == "http://registry:8080/apis/ccompat/v7"
    assert "s3cret" not in repr(settings) and "s3cret" not in str(settings.model_dump())


def answering(status: int, body: object, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handle)


def test_credentials_go_as_basic_auth():
    seen: list[httpx.Request] = []
    settings = SchemaRegistrySettings(url="http://r/apis/ccompat/v7", username="jobpost", password="s3cret")
    RegistryClient(settings, answering(200, {"id": 4}, seen)).register("t.postings-value", "{}")
    assert seen[0].headers["Authorization"] == "Basic " + base64.b64encode(b"jobpost:s3cret").decode()
    assert seen[0].url.path == "/apis/ccompat/v7/subjects/t.postings-value/versions"


def test_refused_credentials_say_which_settings_to_check():
    client = RegistryClient(SchemaRegistrySettings(url="http://r"), answering(401, {"message": "no"}, []))
    with pytest.raises(SchemaRegistryError, match="JOBPOST_SCHEMA_REGISTRY_USERNAME"):
        client.register("t.postings-value", "{}")


def test_an_incompatible_schema_names_the_subject_and_the_registrys_reason():
    refusal = {"error_code": 409, "message": "reader type: STRING not compatible with writer type: LONG"}
    client = RegistryClient(SchemaRegistrySettings(url="http://r"), answering(409, refusal, []))
    with pytest.raises(SchemaRegistryError, match=r"t\.postings-value.*STRING not compatible"):
        client.register("t.postings-value", "{}")
