"""A live process's local stores, handed to a new one so it starts near the log's end.

A replica with no local state must otherwise read every partition of its sources before
it serves (minutes at a million postings, an hour at ten). Instead it can copy a live
replica's stores: each a RocksDB checkpoint (hard links of its immutable files, taken
while the owner goes on writing), consistent with the source offset it records, so the copy
is what that replica held at some offset of each partition. It is a cache of Kafka like
any other — opened and checked like any other (cluster and topic id, age, the log's bounds)
and brought up to date by reading only what was written since its checkpoint.

The copy travels as one tar stream (`snapshot_tar`), built while it is sent, whose last
member is a manifest: the SHA-256 of every file sent, by store. `fetch` reads it into a
fresh folder beside the state, hashing each file as it lands, and moves into place only a
store whose files are exactly the manifest's, with its digests, and only where the state
has none (it never overwrites a store). A stream without its manifest (cut short, or from
a release before manifests) puts nothing in place. Over https (a peer's internal port with
TLS) the stream is also what the peer sent; the digests say it arrived whole.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import queue
import shutil
import ssl
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
from prometheus_client import Counter

from runtime.stores import LIVE

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/x-tar"
MANIFEST = "MANIFEST.json"  # the stream's last member: {"stores": {store: {file: sha-256 hex}}}
_CHUNK = 1 << 20
_MANIFEST_MAX = 16 << 20
REFUSED_STORES = Counter(
    "jobpost_snapshot_refused_stores_total",
    "Stores of a copied snapshot not used: a file missing, extra, or not the manifest's digest",
)
# What a store is, under the state folder and in the stream: <component>/<topic>/<partition>.
_STORE_DEPTH = 3


class SnapshotError(ValueError):
    """A stream that is not a snapshot this release can use (an unsafe member, no manifest)."""


def checkpoint_all(into: Path, state_dir: Path) -> int:
    """A checkpoint of every store this process has open under `state_dir`, under `into` as
    under the state folder (`<component>/<topic>/<partition>`); how many were taken. A store
    closed or rebuilt meanwhile is left out: the new replica reads that partition from Kafka."""
    taken = 0
    home = state_dir.resolve()
    for stores in list(LIVE):
        if not stores.settings.dir.resolve().is_relative_to(home):
            continue  # another component's folder (a test, a tool in the same process)
        for partition, store in list(stores.open.items()):
            target = into / stores.name / stores.topic / str(partition)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                store.checkpoint_to(target)
            except Exception as exc:  # noqa: BLE001 - rocksdict reports a closed store as a bare Exception
                log.info("snapshot leaves out %s: %s", target, exc)
                shutil.rmtree(target, ignore_errors=True)
                continue
            taken += 1
    return taken


class _Chunks(io.RawIOBase):
    """A write-only file whose writes become chunks on a bounded queue."""

    def __init__(self, chunks: queue.Queue[bytes | BaseException | None]) -> None:
        self.chunks = chunks
        self.buffer = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.buffer += data
        if len(self.buffer) >= _CHUNK:
            self.chunks.put(bytes(self.buffer))
            self.buffer.clear()
        return len(data)

    def flush(self) -> None:
        if self.buffer:
            self.chunks.put(bytes(self.buffer))
            self.buffer.clear()


def snapshot_tar(state_dir: Path) -> Iterator[bytes]:
    """A tar of checkpoints of every open store, as it is written (a thread writes it; at
    most 16 MiB wait to be sent). The checkpoints are removed once sent."""
    into = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=_ensure(state_dir)))  # hard links: same disk
    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=16)

    def write() -> None:
        try:
            started = time.monotonic()
            taken = checkpoint_all(into, state_dir)
            log.info("snapshot: %d stores checkpointed in %.1f s", taken, time.monotonic() - started)
            sink = _Chunks(chunks)
            with tarfile.open(fileobj=sink, mode="w|") as tar:
                _write_stores(tar, into)
            sink.flush()
            chunks.put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, which raises it
            chunks.put(exc)

    writer = threading.Thread(target=write, name="snapshot", daemon=True)
    writer.start()
    try:
        while (chunk := chunks.get()) is not None:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
    finally:
        writer.join(60)
        shutil.rmtree(into, ignore_errors=True)


def _write_stores(tar: tarfile.TarFile, into: Path) -> None:
    """Every file of every store under `into`, each hashed as it is written, then the manifest."""
    manifest: dict[str, dict[str, str]] = {}
    for store in sorted(p for p in into.glob("/".join("*" * _STORE_DEPTH)) if p.is_dir()):
        name = store.relative_to(into).as_posix()
        digests = manifest[name] = {}
        for path in sorted(p for p in store.rglob("*") if p.is_file()):
            relative = path.relative_to(store).as_posix()
            info = tar.gettarinfo(str(path), arcname=f"{name}/{relative}")
            with path.open("rb") as file:
                hashing = _Hashing(file)
                tar.addfile(info, hashing)  # type: ignore[arg-type]
            digests[relative] = hashing.digest.hexdigest()
    document = json.dumps({"stores": manifest}, sort_keys=True).encode()
    info = tarfile.TarInfo(MANIFEST)
    info.size, info.mtime = len(document), int(time.time())
    tar.addfile(info, io.BytesIO(document))


class _Hashing:
    """A file read through a SHA-256 of what was read."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.digest.update(data)
        return data


class _Body(io.RawIOBase):
    """The response body as a readable file, for tarfile's stream mode."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.rest:
            self.rest = next(self.chunks, b"")
            if not self.rest:
                return 0
        n = min(len(buffer), len(self.rest))
        buffer[:n] = self.rest[:n]
        self.rest = self.rest[n:]
        return n


def has_state(state_dir: Path, component: str) -> bool:
    """Whether the folder holds any store of this component."""
    return any((state_dir / component).glob("*/*"))


def fetch(
    peers: list[str],
    token: str,
    state_dir: Path,
    timeout_s: float = 120.0,
    verify: ssl.SSLContext | bool = True,
) -> bool:
    """Copy a live peer's stores into `state_dir` (the first peer that answers); False when
    none did, and the process reads its state from Kafka as it would have. `verify`: how
    an https peer's certificate is checked (a context with the operator's CA)."""
    for peer in peers:
        started = time.monotonic()
        landing = Path(tempfile.mkdtemp(prefix=".incoming-", dir=_ensure(state_dir)))
        try:
            with httpx.stream(
                "GET",
                f"{peer.rstrip('/')}/ops/snapshot",
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx.Timeout(timeout_s, connect=5),
                verify=verify,
            ) as response:
                response.raise_for_status()
                verified = receive(response.iter_bytes(_CHUNK), landing)
            moved = _move_into_place(landing, state_dir, verified)
            log.info("copied %d stores from %s in %.1f s", moved, peer, time.monotonic() - started)
            return True
        except (
            httpx.HTTPError,
            tarfile.TarError,
            OSError,
            SnapshotError,
        ) as exc:  # FilterError is a TarError
            log.warning("no snapshot from %s: %s", peer, exc)
        finally:
            shutil.rmtree(landing, ignore_errors=True)
    return False


def receive(chunks: Iterator[bytes], landing: Path) -> list[str]:
    """Unpack a snapshot stream into `landing`, hashing each file as it lands; the stores
    (`<component>/<topic>/<partition>`) whose files are exactly those of the manifest, with
    its digests. A SnapshotError for a stream that is not a whole snapshot."""
    received: dict[str, dict[str, str]] = {}
    manifest: dict[str, dict[str, str]] | None = None
    body = io.BufferedReader(_Body(chunks), _CHUNK)
    with tarfile.open(fileobj=body, mode="r|") as tar:
        for member in tar:
            if manifest is not None:
                raise SnapshotError(f"{member.name!r} after the manifest")
            if member.name == MANIFEST and member.isfile():
                manifest = _manifest(tar, member)
                continue
            safe = tarfile.data_filter(member, str(landing))  # refuses `..`, absolute paths, links, devices
            store, relative = _place(safe)
            received.setdefault(store, {})[relative] = _land(tar, safe, landing)
    if manifest is None:
        raise SnapshotError("no manifest: the stream was cut short, or comes from an older release")
    verified = []
    for store, files in sorted(received.items()):
        if manifest.get(store) == files:
            verified.append(store)
        else:
            REFUSED_STORES.inc()
            log.warning("snapshot store %s refused: its files are not the manifest's", store)
    return verified


def _place(member: tarfile.TarInfo) -> tuple[str, str]:
    """The store a member belongs to and its path inside it; only regular files of a store."""
    parts = Path(member.name).parts
    if not member.isfile() or len(parts) <= _STORE_DEPTH:
        raise SnapshotError(f"{member.name!r} is not a file of a store")
    return "/".join(parts[:_STORE_DEPTH]), "/".join(parts[_STORE_DEPTH:])


def _land(tar: tarfile.TarFile, member: tarfile.TarInfo, landing: Path) -> str:
    """Write one file under `landing`; its SHA-256 (hex)."""
    target = landing / member.name
    target.parent.mkdir(parents=True, exist_ok=True)
    source = tar.extractfile(member)
    assert source is not None  # a regular file (checked by _place)
    digest = hashlib.sha256()
    with target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _manifest(tar: tarfile.TarFile, member: tarfile.TarInfo) -> dict[str, dict[str, str]]:
    source = tar.extractfile(member)
    if source is None or member.size > _MANIFEST_MAX:
        raise SnapshotError("a manifest that cannot be read")
    try:
        stores = json.loads(source.read())["stores"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotError("a manifest that is not {stores: {...}}") from exc
    if not isinstance(stores, dict):
        raise SnapshotError("a manifest that is not {stores: {...}}")
    return stores


def _move_into_place(landing: Path, state_dir: Path, stores: list[str]) -> int:
    moved = 0
    for name in stores:
        store = landing / name
        target = state_dir / name
        if target.exists():
            continue  # never overwrite a store this process has
        target.parent.mkdir(parents=True, exist_ok=True)
        store.rename(target)
        moved += 1
    return moved


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
