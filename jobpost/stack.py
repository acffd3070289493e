"""Local Kafka (KRaft) and Elasticsearch, run from Maven Central artifacts with the local JDK.

`jobpost stack fetch|start|stop|status` manage them. Everything lives under one folder
(default `.stack/` in the project, ignored by git): the fetched jars, server data, logs
and pid files. Starting a running server is a no-op; stopping kills its process group.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
POMS = PROJECT_ROOT / "stack"


class StackError(RuntimeError):
    """A local server could not be fetched, started or stopped."""


class StackSettings(BaseSettings):
    """Where the local servers live and listen. Environment prefix `JOBPOST_STACK_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_STACK_")

    dir: Path = PROJECT_ROOT / ".stack"
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    kafka_heap: str = "512m"
    elasticsearch_port: int = 9200
    elasticsearch_heap: str = "512m"
    java_home: Path | None = None
    start_timeout_s: float = 120.0

    @property
    def kafka_bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def elasticsearch_url(self) -> str:
        return f"http://127.0.0.1:{self.elasticsearch_port}"


def _java_home(settings: StackSettings) -> Path:
    if settings.java_home:
        return settings.java_home
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    java = shutil.which("java")
    if java is None:
        raise StackError("no JDK found: install a JDK >= 17 or set JAVA_HOME")
    return Path(java).resolve().parent.parent


def _mvn(pom: Path, *goals: str) -> None:
    if shutil.which("mvn") is None:
        raise StackError("Maven (mvn) is needed to fetch the server jars")
    result = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(pom), *goals],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise StackError(f"mvn failed for {pom}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")


@dataclass
class Server:
    """One local server: how to fetch it, start it, and tell that it answers."""

    name: str
    settings: StackSettings

    @property
    def home(self) -> Path:
        return self.settings.dir / self.name

    @property
    def pid_file(self) -> Path:
        return self.settings.dir / "run" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.settings.dir / "logs" / f"{self.name}.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, owned by the unprivileged user we started it as
        return pid

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> bool:
        """Start the server unless it runs already; True when this call started it."""
        if self.running():
            return False
        if self.answers():
            raise StackError(f"{self.name}: something else already listens on its port")
        self.fetch()
        self.prepare()
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stop() kills the JVM children too
                env=self.environment(),
                cwd=self.home,
                **self.popen_user(),
            )
        self.pid_file.write_text(str(proc.pid))
        _wait_until(
            self.answers,
            timeout=self.settings.start_timeout_s,
            what=f"{self.name} to answer",
            alive=lambda: proc.poll() is None,
            log=self.log_file,
        )
        return True

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the server started by start(); True when one was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_alive(pid):
            time.sleep(0.2)
        if _group_alive(pid):
            _signal_group(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True

    # Hooks for the two servers.
    def fetch(self) -> None:
        raise NotImplementedError

    def prepare(self) -> None:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def popen_user(self) -> dict[str, Any]:
        return {}

    def answers(self) -> bool:
        raise NotImplementedError


class KafkaServer(Server):
    """A single-node KRaft broker (combined broker + controller) on 127.0.0.1."""

    def __init__(self, settings: StackSettings) -> None:
        super().__init__("kafka", settings)

    @property
    def jars(self) -> Path:
        return self.settings.dir / "jars" / "kafka"

    def fetch(self) -> None:
        if self.jars.is_dir() and any(self.jars.glob("kafka_2.13-*.jar")):
            return
        tmp = self.jars.with_name("kafka.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        _mvn(
            POMS / "kafka" / "pom.xml",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={tmp}",
        )
        tmp.rename(self.jars)

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    def prepare(self) -> None:
        s = self.settings
        data = self.home / "data"
        self.home.mkdir(parents=True, exist_ok=True)
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{s.kafka_controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{s.kafka_port},CONTROLLER://127.0.0.1:{s.kafka_controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{s.kafka_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # Local disks may be small: keep the broker's own segments modest.
            "log.segment.bytes": str(64 * 1024 * 1024),
            # Lets the integration tests see compaction happen in seconds, not hours.
            "log.cleaner.backoff.ms": "1000",
        }
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        if not (data / "meta.properties").exists():
            cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
            result = subprocess.run(
                [
                    *self._java(),
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(self.config_file),
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise StackError(f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}")

    def _java(self) -> list[str]:
        java = _java_home(self.settings) / "bin" / "java"
        return [
            str(java),
            f"-Xms{self.settings.kafka_heap}",
            f"-Xmx{self.settings.kafka_heap}",
            f"-Dlog4j2.configurationFile={POMS / 'kafka' / 'log4j2.properties'}",
            "-cp",
            f"{self.jars}/*",
        ]

    def command(self) -> list[str]:
        return [*self._java(), "kafka.Kafka", str(self.config_file)]

    def answers(self) -> bool:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.settings.kafka_bootstrap, "log_level": 0})
        try:
            admin.list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - any failure means "not answering yet"
            return False
        return True

    def tool(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's Java tools (e.g. ProducerPerformance) against the jars."""
        self.fetch()
        return subprocess.run([*self._java(), main_class, *args], capture_output=True, text=True)


class ElasticsearchServer(Server):
    """Elasticsearch's official integration-test distribution, single node, no security."""

    version = "8.19.0"

    def __init__(self, settings: StackSettings) -> None:
        super().__init__("elasticsearch", settings)

    @property
    def home(self) -> Path:
        # Elasticsearch refuses to run as root; as root we run it as `nobody`, who must be
        # able to reach its folder, so it moves to the temp dir if the stack dir is private.
        base = self.settings.dir
        if os.geteuid() == 0 and not _world_traversable(base):
            digest = hashlib.sha1(str(base.resolve()).encode()).hexdigest()[:10]
            base = Path(tempfile.gettempdir()) / f"jobpost-stack-{digest}"
        return base / f"elasticsearch-{self.version}"

    def fetch(self) -> None:
        if (self.home / "bin" / "elasticsearch").exists():
            return
        download = self.settings.dir / "jars" / "elasticsearch"
        zip_path = download / f"elasticsearch-{self.version}.zip"
        if not zip_path.exists():
            _mvn(
                POMS / "elasticsearch" / "pom.xml",
                "dependency:copy-dependencies",
                f"-Delasticsearch.version={self.version}",
                f"-DoutputDirectory={download}",
            )
        _unzip_with_modes(zip_path, self.home.parent)

    def prepare(self) -> None:
        for folder in ("data", "logs", "tmp"):
            (self.home / folder).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            for path in [self.home, *self.home.rglob("*")]:
                os.chown(path, *_nobody(), follow_symlinks=False)

    def command(self) -> list[str]:
        s = self.settings
        options = {
            "discovery.type": "single-node",
            "network.host": "127.0.0.1",
            "http.port": str(s.elasticsearch_port),
            "transport.port": str(s.elasticsearch_port + 100),
            "path.data": str(self.home / "data"),
            "path.logs": str(self.home / "logs"),
            "xpack.security.enabled": "false",
            "cluster.routing.allocation.disk.threshold_enabled": "false",
            "indices.breaker.total.use_real_memory": "false",
            "action.destructive_requires_name": "false",
        }
        args = [str(self.home / "bin" / "elasticsearch")]
        for key, value in options.items():
            args += ["-E", f"{key}={value}"]
        return args

    def environment(self) -> dict[str, str]:
        heap = self.settings.elasticsearch_heap
        return {
            **os.environ,
            "ES_JAVA_HOME": str(_java_home(self.settings)),
            "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}",
            "ES_TMPDIR": str(self.home / "tmp"),
            "HOME": str(self.home),
        }

    def popen_user(self) -> dict[str, Any]:
        if os.geteuid() == 0:
            uid, gid = _nobody()
            return {"user": uid, "group": gid, "extra_groups": []}
        return {}

    def answers(self) -> bool:
        try:
            url = f"{self.settings.elasticsearch_url}/_cluster/health?wait_for_status=yellow&timeout=1s"
            with urllib.request.urlopen(url, timeout=3) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False


def servers(settings: StackSettings) -> list[Server]:
    return [KafkaServer(settings), ElasticsearchServer(settings)]


def _nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def _world_traversable(path: Path) -> bool:
    path = path.resolve()
    for folder in [*reversed(path.parents)]:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return False
    return not path.exists() or bool(path.stat().st_mode & stat.S_IXOTH)


def _unzip_with_modes(zip_path: Path, target: Path) -> None:
    """Unpack keeping the unix permission bits (zipfile drops them; bin/ must stay executable)."""
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            extracted = Path(archive.extract(info, target))
            mode = info.external_attr >> 16
            if mode:
                extracted.chmod(mode & 0o7777)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _group_alive(pid: int) -> bool:
    # Reap the leader if this process started it: a zombie leader keeps the group alive.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    alive: Callable[[], bool],
    log: Path,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if not alive():
            tail = log.read_text(errors="replace")[-3000:]
            raise StackError(f"gave up waiting for {what}: the process exited. Log tail:\n{tail}")
        time.sleep(0.5)
    raise StackError(f"gave up waiting for {what} after {timeout:.0f} s; see {log}")
