"""A single-node Elasticsearch from its official integration-test distribution."""

from __future__ import annotations

import hashlib
import os
import pwd
import stat
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from jobpost.stack.process import Server
from jobpost.stack.settings import POMS, StackSettings, java_home, mvn


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
            mvn(
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
            "ES_JAVA_HOME": str(java_home(self.settings)),
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
