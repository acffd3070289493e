"""A single-node Elasticsearch from its official integration-test distribution."""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from jobpost_dev.ports import Port
from jobpost_dev.stack import unprivileged
from jobpost_dev.stack.process import Progress, Server, fetch_archive, megabytes, quiet
from jobpost_dev.stack.settings import StackError, StackSettings, java_home


class ElasticsearchServer(Server):
    """Elasticsearch's official integration-test distribution, single node, no security."""

    version = "8.19.0"
    artifact = "org.elasticsearch.distribution.integ-test-zip:elasticsearch"
    download_mb = 97

    def __init__(self, settings: StackSettings) -> None:
        super().__init__("elasticsearch", settings)
        self._base: Path | None = None

    @property
    def home(self) -> Path:
        return self.base() / f"elasticsearch-{self.version}"

    def base(self) -> Path:
        """The folder holding the home: the stack dir, or one under the temp dir (see below)."""
        if self._base is None:
            self._base = self._choose_base()
        return self._base

    def _choose_base(self) -> Path:
        # Elasticsearch refuses to run as root; as root we run it as `nobody`, who must be
        # able to reach its folder, so it moves to the temp dir if the stack dir is private.
        if os.geteuid() != 0:
            return self.settings.dir
        self.settings.dir.mkdir(parents=True, exist_ok=True)
        if unprivileged.world_traversable(self.settings.dir):
            return self.settings.dir
        return unprivileged.temp_base(
            self.settings.dir / "elasticsearch.home",
            f"elasticsearch-{self.version}",
            owner=os.geteuid(),
            home_owners={os.geteuid(), unprivileged.nobody()[0]},
        )

    def fetch(self, progress: Progress = quiet) -> None:
        if (self.home / "bin" / "elasticsearch").exists():
            return
        zip_path = self.settings.dir / "jars" / "elasticsearch" / f"elasticsearch-{self.version}.zip"
        fetch_archive(
            "elasticsearch",
            f"{self.artifact} (zip)",
            self.version,
            self.download_mb,
            zip_path,
            progress,
        )
        progress(f"elasticsearch: unpacking {zip_path.name} into {self.home} ...")
        self.unpack(zip_path)
        progress(f"elasticsearch: unpacked, {megabytes(self.home):.0f} MB")

    def fetched_into(self) -> Path:
        return self.home

    def addresses(self) -> list[str]:
        return [self.settings.elasticsearch_url]

    def ports(self) -> list[Port]:
        port, setting = (
            self.settings.elasticsearch_port,
            "JOBPOST_STACK_ELASTICSEARCH_PORT",
        )
        return [
            Port(port, self.name, setting),
            Port(port + 100, f"{self.name}'s transport (its port + 100)", setting),
        ]

    def unpack(self, zip_path: Path) -> None:
        """Unpack next to the home, then move it in whole: never into a folder `nobody` owns."""
        home = self.home
        partial = home.with_name(f".{home.name}.partial")
        _remove(partial)
        _unzip_with_modes(zip_path, partial)
        if not (partial / home.name / "bin" / "elasticsearch").exists():
            raise StackError(f"{zip_path} holds no {home.name}/bin/elasticsearch")
        _remove(home)
        (partial / home.name).rename(home)
        partial.rmdir()

    def prepare(self) -> None:
        for folder in ("data", "logs", "tmp"):
            (self.home / folder).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            unprivileged.chown_tree(self.home, *unprivileged.nobody())

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
            "ES_JAVA_HOME": str(java_home(self.settings)),
            "ES_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}",
            "ES_TMPDIR": str(self.home / "tmp"),
            "HOME": str(self.home),
        }

    def popen_user(self) -> dict[str, Any]:
        if os.geteuid() == 0:
            uid, gid = unprivileged.nobody()
            return {"user": uid, "group": gid, "extra_groups": []}
        return {}

    def answers(self) -> bool:
        try:
            url = f"{self.settings.elasticsearch_url}/_cluster/health?wait_for_status=yellow&timeout=1s"
            with urllib.request.urlopen(url, timeout=3) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False


def _remove(path: Path) -> None:
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)  # removes by folder descriptor: a symlink inside is not followed


def _unzip_with_modes(zip_path: Path, target: Path) -> None:
    """Unpack keeping the unix permission bits (zipfile drops them; bin/ must stay executable)."""
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            extracted = Path(archive.extract(info, target))
            mode = info.external_attr >> 16
            if mode:
                extracted.chmod(mode & 0o7777)
