"""`make run` with Prometheus: the scrape config it writes and when it runs one."""

import shutil
import socket
import subprocess

import pytest

from jobpost_dev import prometheus
from jobpost_dev.run import RunSettings, components


def test_every_replica_of_every_component_is_scraped():
    config = prometheus.scrape_config(components(RunSettings(replicas=2)))
    targets = {
        job["job_name"]: [(c["targets"][0], c["labels"]["component"]) for c in job["static_configs"]]
        for job in config["scrape_configs"]
    }
    assert targets == {
        "jobpost-api": [("127.0.0.1:8000", "api-1"), ("127.0.0.1:8001", "api-2")],
        "jobpost-linkedin": [("127.0.0.1:9101", "linkedin-1"), ("127.0.0.1:9104", "linkedin-2")],
        "jobpost-indeed": [("127.0.0.1:9102", "indeed-1"), ("127.0.0.1:9105", "indeed-2")],
        "jobpost-indexer": [("127.0.0.1:9103", "indexer-1"), ("127.0.0.1:9106", "indexer-2")],
        "jobpost-webhooks": [("127.0.0.1:9107", "webhooks-1"), ("127.0.0.1:9108", "webhooks-2")],
    }
    assert config["rule_files"] == [str(prometheus.rules())]


def test_prometheus_accepts_the_config_it_is_given(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail(
            "promtool not found: install Debian's prometheus (apt-get install prometheus; .ci/run does)"
        )
    path = prometheus.write_config(tmp_path, components(RunSettings()))
    checked = subprocess.run(
        [promtool, "check", "config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 17 rules found" in checked.stdout


def test_it_listens_on_loopback_and_keeps_its_data_in_the_stack_folder(tmp_path):
    argv = prometheus.command("/usr/bin/prometheus", tmp_path, 9090)
    assert "--web.listen-address=127.0.0.1:9090" in argv
    assert f"--storage.tsdb.path={tmp_path / 'data'}" in argv


def test_off_means_off():
    assert prometheus.available("false", 9090) == (None, "off (JOBPOST_RUN_PROMETHEUS=false)")


def test_auto_runs_without_it_when_it_is_not_installed_and_true_refuses(monkeypatch):
    monkeypatch.setattr(prometheus.shutil, "which", lambda _name: None)
    binary, why = prometheus.available("auto", 9090)
    assert binary is None and "apt-get install prometheus" in why
    with pytest.raises(prometheus.PrometheusUnavailable, match="not installed"):
        prometheus.available("true", 9090)


def test_a_taken_port_is_said_plainly(monkeypatch):
    monkeypatch.setattr(prometheus.shutil, "which", lambda _name: "/usr/bin/prometheus")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        assert prometheus.available("auto", port) == (
            None,
            f"127.0.0.1:{port} is taken (JOBPOST_RUN_PROMETHEUS_PORT moves it)",
        )
        with pytest.raises(prometheus.PrometheusUnavailable, match="is taken"):
            prometheus.available("true", port)


def test_run_settings_take_the_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("JOBPOST_RUN_PROMETHEUS", "false")
    monkeypatch.setenv("JOBPOST_RUN_PROMETHEUS_PORT", "19090")
    settings = RunSettings()
    assert (settings.prometheus, settings.prometheus_port) == ("false", 19090)
