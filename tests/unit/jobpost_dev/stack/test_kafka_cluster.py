"""JOBPOST_STACK_BROKERS=3: three KRaft nodes' configs, which nodes start, stopping all at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from jobpost import cli
from jobpost_dev import stack
from jobpost_dev.stack import cluster as cluster_module
from jobpost_dev.stack import pidfile
from jobpost_dev.stack.pidfile import ProcessIdentity

VOTERS = "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097"


@pytest.fixture
def three(tmp_path: Path) -> stack.StackSettings:
    return stack.StackSettings(dir=tmp_path, brokers=3)


def test_three_nodes_each_with_its_ports_folder_log_and_pid_file(three: stack.StackSettings) -> None:
    nodes = stack.kafka_nodes(three)

    assert [n.name for n in nodes] == ["kafka-1", "kafka-2", "kafka-3"]
    assert [(n.node_id, n.client_port, n.controller_port) for n in nodes] == [
        (1, 9092, 9093),
        (2, 9094, 9095),
        (3, 9096, 9097),
    ]
    assert [n.address for n in nodes] == ["127.0.0.1:9092", "127.0.0.1:9094", "127.0.0.1:9096"]
    for folders in ({n.home for n in nodes}, {n.log_file for n in nodes}, {n.pid_file for n in nodes}):
        assert len(folders) == 3
    assert nodes[1].home == three.dir / "kafka-2"
    assert nodes[1].pid_file == three.dir / "run" / "kafka-2.pid"
    assert nodes[1].log_file == three.dir / "logs" / "kafka-2.log"


def test_a_node_config_names_the_static_quorum_and_replicates_everything(three: stack.StackSettings) -> None:
    node = stack.kafka_nodes(three)[1]

    config = node.properties(node.data)

    assert config["node.id"] == "2"
    assert config["process.roles"] == "broker,controller"
    assert config["controller.quorum.voters"] == VOTERS
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9095"
    assert config["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9094"
    assert config["log.dirs"] == str(three.dir / "kafka-2" / "data")
    assert {
        key: config[key]
        for key in (
            "offsets.topic.replication.factor",
            "transaction.state.log.replication.factor",
            "transaction.state.log.min.isr",
            "min.insync.replicas",
            "default.replication.factor",
            "share.coordinator.state.topic.replication.factor",
            "share.coordinator.state.topic.min.isr",
        )
    } == {
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "min.insync.replicas": "2",
        "default.replication.factor": "3",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
    }


def test_client_ports_follow_the_kafka_port(tmp_path: Path) -> None:
    settings = stack.StackSettings(dir=tmp_path, brokers=3, kafka_port=19092)

    assert settings.kafka_ports() == [(19092, 19093), (19094, 19095), (19096, 19097)]
    assert settings.kafka_bootstrap == "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096"
    config = stack.kafka_nodes(settings)[2].properties(Path("/data"))
    assert config["controller.quorum.voters"] == "1@127.0.0.1:19093,2@127.0.0.1:19095,3@127.0.0.1:19097"


def test_one_broker_keeps_todays_name_layout_and_config(tmp_path: Path) -> None:
    settings = stack.StackSettings(dir=tmp_path, kafka_port=19092, kafka_controller_port=19999)
    (node,) = stack.kafka_nodes(settings)

    config = node.properties(node.data)

    assert isinstance(stack.kafka_for(settings), stack.KafkaServer)
    assert (node.name, node.home, node.pid_file) == (
        "kafka",
        tmp_path / "kafka",
        tmp_path / "run" / "kafka.pid",
    )
    assert settings.kafka_bootstrap == "127.0.0.1:19092"
    assert config["controller.quorum.voters"] == "1@127.0.0.1:19999"
    assert config["offsets.topic.replication.factor"] == "1"
    assert config["transaction.state.log.min.isr"] == "1"
    # One broker says its replication explicitly (1 and 1), as three say 3 and 2.
    assert (config["default.replication.factor"], config["min.insync.replicas"]) == ("1", "1")


@pytest.mark.parametrize("brokers", ["0", "2", "4"])
def test_brokers_must_be_one_or_three(monkeypatch: pytest.MonkeyPatch, brokers: str) -> None:
    monkeypatch.setenv("JOBPOST_STACK_BROKERS", brokers)

    with pytest.raises(ValidationError, match="1 or 3"):
        stack.StackSettings()


def test_brokers_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_STACK_BROKERS", "3")

    assert stack.StackSettings().brokers == 3
    monkeypatch.delenv("JOBPOST_STACK_BROKERS")
    assert stack.StackSettings().brokers == 1


def _running(node: stack.KafkaServer) -> None:
    identity = ProcessIdentity.of(os.getpid())
    assert identity is not None
    pidfile.write(node.pid_file, identity)


def _killed(node: stack.KafkaServer) -> None:
    pidfile.write(node.pid_file, ProcessIdentity(os.getpid(), "a-process-long-gone"))


class Launches:
    """Stands in for everything start() does to the system; records what it launched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answers: bool = True) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.launched: list[str] = []
        self.prepared: list[str] = []
        self.ended: list[list[int]] = []
        monkeypatch.setattr(stack.KafkaServer, "check_free", lambda _self: None)
        monkeypatch.setattr(stack.KafkaServer, "fetch", lambda _self, _progress=None: None)
        monkeypatch.setattr(stack.KafkaCluster, "answers", lambda _self: answers)
        monkeypatch.setattr(
            stack.KafkaCluster, "prepare", lambda _self, nodes: self.prepared.extend(n.name for n in nodes)
        )
        monkeypatch.setattr(stack.KafkaServer, "launch", lambda node: self._launch(node))
        monkeypatch.setattr(cluster_module, "end_groups", lambda pids, timeout: self.ended.append(pids))

    def _launch(
        self, node: stack.KafkaServer, code: str = "import time; time.sleep(30)"
    ) -> subprocess.Popen[bytes]:
        self.launched.append(node.name)
        self.procs.append(subprocess.Popen([sys.executable, "-c", code]))
        return self.procs[-1]

    def end(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def test_start_launches_only_the_node_that_is_down(
    three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = stack.KafkaCluster(three)
    one, two, three_ = kafka.nodes
    _running(one)
    _killed(two)  # kill -9: its pid file names a process that no longer exists
    _running(three_)
    launches = Launches(monkeypatch)
    said: list[str] = []

    try:
        assert kafka.down() == [two]
        assert kafka.start(progress=said.append) is True
    finally:
        launches.end()

    assert launches.prepared == launches.launched == ["kafka-2"]
    assert said == ["kafka: starting kafka-2 ..."]
    assert kafka.launched == [two]


def test_start_launches_every_node_before_waiting_and_none_when_all_run(
    three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = stack.KafkaCluster(three)
    launches = Launches(monkeypatch)

    try:
        assert kafka.start() is True
    finally:
        launches.end()
    assert launches.launched == ["kafka-1", "kafka-2", "kafka-3"]

    for node in kafka.nodes:
        _running(node)
    assert kafka.running()
    assert kafka.start() is False
    assert launches.launched == ["kafka-1", "kafka-2", "kafka-3"]


def test_a_node_that_exits_while_waiting_fails_the_start_and_leaves_nothing(
    three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = stack.KafkaCluster(three)
    kafka.look_every_s = 0.01
    launches = Launches(monkeypatch, answers=False)
    crashing = kafka.nodes[2]
    crashing.log_file.parent.mkdir(parents=True)
    crashing.log_file.write_text("ERROR something broke\n")
    fake_launch = launches._launch

    def launch(node: stack.KafkaServer) -> subprocess.Popen[bytes]:
        return fake_launch(node, "raise SystemExit(1)") if node is crashing else fake_launch(node)

    monkeypatch.setattr(stack.KafkaServer, "launch", launch)

    try:
        with pytest.raises(stack.StackError, match="kafka-3 exited") as failed:
            kafka.start()
    finally:
        launches.end()

    assert "something broke" in str(failed.value)
    assert len(launches.ended) == 1 and len(launches.ended[0]) == 3
    assert kafka.launched == []


def test_stop_signals_every_node_at_once(three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = stack.KafkaCluster(three)
    for node in kafka.nodes:
        _running(node)
    ended: list[list[int]] = []
    monkeypatch.setattr(cluster_module, "end_groups", lambda pids, timeout: ended.append(pids))

    assert kafka.stop() is True

    assert ended == [[os.getpid()] * 3]
    assert not any(node.pid_file.exists() for node in kafka.nodes)
    assert kafka.stop() is False


def test_stop_launched_leaves_the_nodes_it_found_running(
    three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = stack.KafkaCluster(three)
    for node in kafka.nodes:
        _running(node)
    kafka.launched = [kafka.nodes[1]]
    monkeypatch.setattr(cluster_module, "end_groups", lambda pids, timeout: None)

    assert kafka.stop_launched() is True

    assert [node.pid_file.exists() for node in kafka.nodes] == [True, False, True]


def test_every_node_is_formatted_with_one_cluster_id(
    three: stack.StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_format(node: stack.KafkaServer, cluster_id: str) -> list[str]:
        meta = node.data / "meta.properties"
        script = f"import pathlib; p = pathlib.Path({str(meta)!r}); p.parent.mkdir(parents=True); "
        script += f"p.write_text('node.id={node.node_id}\\ncluster.id={cluster_id}\\n')"
        return [sys.executable, "-c", script]

    monkeypatch.setattr(stack.KafkaServer, "format_command", fake_format)
    kafka = stack.KafkaCluster(three)

    kafka.prepare(kafka.nodes)

    ids = {node.recorded_cluster_id() for node in kafka.nodes}
    assert len(ids) == 1 and None not in ids
    assert all(node.config_file.exists() for node in kafka.nodes)
    # A node whose storage is lost later joins with the same id.
    (kafka.nodes[1].data / "meta.properties").unlink()
    assert kafka.nodes[1].cluster_id() in ids


def test_status_json_lists_each_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path))
    monkeypatch.setenv("JOBPOST_STACK_BROKERS", "3")
    monkeypatch.setenv("JOBPOST_STACK_KAFKA_PORT", "19092")

    assert cli.main(["stack", "status", "--json", "--only", "kafka"]) == 0

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {"name": f"kafka-{i}", "pid": None, "addresses": [f"127.0.0.1:{port}"], "running": False}
        for i, port in ((1, 19092), (2, 19094), (3, 19096))
    ]


def test_a_new_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's rule for its own ids: one starting with "-" is read as an option by its tools
    (one format in 64 failed before this)."""
    draws = iter([b"\xf8" + bytes(15), bytes(16)])  # the first encodes to "-AAA...", the second to "AAAA..."
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))

    assert stack.kafka.new_cluster_id() == "A" * 22


def test_the_cluster_id_is_passed_as_one_token(tmp_path: Path) -> None:
    node = stack.KafkaServer(stack.StackSettings(dir=tmp_path))

    assert "--cluster-id=-dash-first" in node.format_command("-dash-first")
