"""The local Apicurio Registry: which JDK runs it and where it listens."""

from pathlib import Path

import pytest

from jobpost_dev.run_env import registry_env
from jobpost_dev.stack import RegistryServer, StackError, StackSettings, servers
from jobpost_dev.stack import registry as registry_module
from jobpost_dev.stack.registry import java_major, registry_java_home


def jdk(root: Path, name: str, version: str) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return home


def test_the_major_version_comes_from_the_release_file(tmp_path):
    assert java_major(jdk(tmp_path, "a", "25.0.3")) == 25
    assert java_major(jdk(tmp_path, "b", "1.8.0_402")) == 8
    assert java_major(tmp_path / "missing") is None


def test_a_new_enough_jdk_is_found_beside_an_old_default(tmp_path, monkeypatch):
    old = jdk(tmp_path, "java-17", "17.0.15")
    new = jdk(tmp_path, "temurin-25", "25.0.3")
    jdk(tmp_path, "temurin-21", "21.0.5")
    monkeypatch.setattr(registry_module, "JVM_FOLDERS", (tmp_path,))
    assert registry_java_home(StackSettings(java_home=old)) == new.resolve()


def test_without_a_new_enough_jdk_the_error_names_what_was_found(tmp_path, monkeypatch):
    old = jdk(tmp_path, "java-17", "17.0.15")
    monkeypatch.setattr(registry_module, "JVM_FOLDERS", (tmp_path,))
    with pytest.raises(
        StackError, match=r"needs Java 21 or newer; found Java 17 at .*java-17.*REGISTRY_JAVA_HOME"
    ):
        registry_java_home(StackSettings(java_home=old))


def test_a_named_jdk_that_is_too_old_is_refused(tmp_path):
    old = jdk(tmp_path, "java-17", "17.0.15")
    with pytest.raises(StackError, match="is Java 17"):
        registry_java_home(StackSettings(registry_java_home=old))


def test_it_listens_on_loopback_only_and_keeps_its_schemas_on_disk(tmp_path):
    new = jdk(tmp_path, "temurin-25", "25.0.3")
    settings = StackSettings(dir=tmp_path / "stack", registry_port=18081, registry_java_home=new)
    command = RegistryServer(settings).command()
    assert command[0] == str(new / "bin" / "java")
    assert "-Dquarkus.http.host=127.0.0.1" in command and "-Dquarkus.http.port=18081" in command
    assert "-Dquarkus.management.host=127.0.0.1" in command and "-Dquarkus.management.port=18082" in command
    assert (
        f"-Dapicurio.datasource.url=jdbc:h2:file:{tmp_path / 'stack' / 'registry' / 'data'}/registry"
        in command
    )
    assert settings.registry_url == "http://127.0.0.1:18081/apis/ccompat/v7"


def test_the_registry_runs_only_in_registry_mode():
    assert [s.name for s in servers(StackSettings())] == ["kafka", "elasticsearch"]
    assert [s.name for s in servers(StackSettings(registry=True))] == ["kafka", "elasticsearch", "registry"]


def test_make_run_in_registry_mode_points_every_component_at_the_stacks_registry():
    mode = StackSettings(registry=True, registry_port=18081)
    assert registry_env(mode, {}) == {"JOBPOST_SCHEMA_REGISTRY_URL": "http://127.0.0.1:18081/apis/ccompat/v7"}
    assert registry_env(mode, {"JOBPOST_SCHEMA_REGISTRY_URL": "http://elsewhere/apis/ccompat/v7"}) == {}
    assert registry_env(StackSettings(), {}) == {}
