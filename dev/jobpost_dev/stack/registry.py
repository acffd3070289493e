"""Apicurio Registry from Maven Central: a schema registry with Confluent's API, for the
registry wire format (`JOBPOST_SCHEMA_REGISTRY_URL`), run only in registry mode.

The `all` tarball of `io.apicurio:apicurio-registry-app` is a ready-to-run Quarkus app
(`quarkus-run.jar`). 3.x needs Java 21 or newer, so the JDK is looked for apart from the
one Kafka and Elasticsearch use (which may be 17). Its storage is an H2 database in a file
under the stack folder, not the in-memory default: schema ids must outlive a restart, since
every record written in the registry's format names one.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from jobpost_dev.ports import Port
from jobpost_dev.stack.process import Progress, Server, fetch_archive, megabytes, quiet
from jobpost_dev.stack.settings import StackError, StackSettings, java_home

MIN_JAVA = 21  # Apicurio Registry 3.x is built for Java 21 (class file version 65)
JVM_FOLDERS = (Path("/usr/lib/jvm"), Path("/opt/java"), Path("/usr/java"))


class RegistryServer(Server):
    """Apicurio Registry on 127.0.0.1: its API on `registry_port`, its management
    interface (health, metrics) on the next port."""

    version = "3.3.3"
    artifact = "io.apicurio:apicurio-registry-app:all (tar.gz)"
    download_mb = 158

    def __init__(self, settings: StackSettings) -> None:
        super().__init__("registry", settings)

    @property
    def app(self) -> Path:
        return self.home / f"apicurio-registry-{self.version}"

    def fetch(self, progress: Progress = quiet) -> None:
        if (self.app / "quarkus-run.jar").exists():
            return
        tarball = self.settings.dir / "jars" / "registry" / f"apicurio-registry-app-{self.version}-all.tar.gz"
        fetch_archive("registry", self.artifact, self.version, self.download_mb, tarball, progress)
        progress(f"registry: unpacking {tarball.name} into {self.app} ...")
        partial = self.app.with_name(f".{self.app.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(partial, filter="data")
        if not (partial / "quarkus-run.jar").exists():
            raise StackError(f"{tarball} holds no quarkus-run.jar")
        shutil.rmtree(self.app, ignore_errors=True)
        partial.rename(self.app)
        progress(f"registry: unpacked, {megabytes(self.app):.0f} MB")

    def fetched_into(self) -> Path:
        return self.app

    def addresses(self) -> list[str]:
        return [self.settings.registry_url]

    def ports(self) -> list[Port]:
        port, setting = self.settings.registry_port, "JOBPOST_STACK_REGISTRY_PORT"
        management = f"{self.name}'s management interface (its port + 1)"
        return [Port(port, self.name, setting), Port(port + 1, management, setting)]

    def prepare(self) -> None:
        (self.home / "data").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        s = self.settings
        options = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": s.registry_port,
            # Without these the management interface binds 0.0.0.0:9000.
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": s.registry_port + 1,
            "apicurio.datasource.url": f"jdbc:h2:file:{self.home / 'data' / 'registry'}",
            # The default pool keeps 20 connections open from the start: 2 are plenty here.
            "apicurio.datasource.jdbc.initial-size": 2,
            "apicurio.datasource.jdbc.min-size": 2,
            "apicurio.datasource.jdbc.max-size": 10,
        }
        heap = s.registry_heap
        return [
            str(registry_java_home(s) / "bin" / "java"),
            f"-Xms{heap}",
            f"-Xmx{heap}",
            *(f"-D{key}={value}" for key, value in options.items()),
            "-jar",
            str(self.app / "quarkus-run.jar"),
        ]

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.settings.registry_url}/subjects", timeout=3) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False


def registry_java_home(settings: StackSettings) -> Path:
    """A JDK >= 21: JOBPOST_STACK_REGISTRY_JAVA_HOME, else the local servers' JDK when it is
    new enough, else the newest one in the usual JVM folders."""
    if settings.registry_java_home:
        major = java_major(settings.registry_java_home)
        if major is None or major < MIN_JAVA:
            raise StackError(
                f"JOBPOST_STACK_REGISTRY_JAVA_HOME={settings.registry_java_home} is Java {major or '?'}:"
                f" Apicurio Registry needs Java {MIN_JAVA} or newer"
            )
        return settings.registry_java_home
    candidates: list[Path] = []
    with contextlib.suppress(StackError):  # no default JDK: the JVM folders may still hold one
        candidates.append(java_home(settings))
    for folder in JVM_FOLDERS:
        if folder.is_dir():
            candidates += sorted(folder.iterdir())
    found = {path.resolve(): java_major(path) for path in candidates}
    usable = [(major, path) for path, major in found.items() if major is not None and major >= MIN_JAVA]
    if usable:
        return max(usable)[1]
    seen = ", ".join(f"Java {major} at {path}" for path, major in found.items() if major) or "none"
    raise StackError(
        f"Apicurio Registry needs Java {MIN_JAVA} or newer; found {seen}."
        " Install a JDK >= 21 (e.g. Temurin) or set JOBPOST_STACK_REGISTRY_JAVA_HOME"
    )


def java_major(home: Path) -> int | None:
    """The major version of the JDK at `home`, from its `release` file (None if it has none)."""
    try:
        release = (home / "release").read_text()
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', release, re.MULTILINE)
    if not match or not (home / "bin" / "java").exists():
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8
