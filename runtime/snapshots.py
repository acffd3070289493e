"""A live process's local stores, handed to a new one so it starts near the log's end.

A replica with no local state must otherwise read every partition of its sources before
it serves (minutes at a million postings, an hour at ten). Instead it can copy a live
replica's stores: each a RocksDB checkpoint (hard links of its immutable files, taken
while the owner goes on writing), consistent with the source offset it records, so the copy
is what that replica held at some offset of each partition. It is a cache of Kafka like
any other — opened and checked like any other (cluster and topic id, age, the log's bounds)
and brought up to date by reading only what was written since its checkpoint.

The copy travels as one tar stream (`snapshot_tar`), built while it is sent; `fetch` reads
it into a fresh folder beside the state and moves each store into place only where the
state has none (it never overwrites a store).
"""

from __future__ import annotations

import io
import logging
import queue
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from runtime.stores import LIVE

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


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
                tar.add(into, arcname=".")
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


def fetch(peers: list[str], token: str, state_dir: Path, timeout_s: float = 120.0) -> bool:
    """Copy a live peer's stores into `state_dir` (the first peer that answers); False when
    none did, and the process reads its state from Kafka as it would have."""
    for peer in peers:
        started = time.monotonic()
        landing = Path(tempfile.mkdtemp(prefix=".incoming-", dir=_ensure(state_dir)))
        try:
            with httpx.stream(
                "GET",
                f"{peer.rstrip('/')}/ops/snapshot",
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx.Timeout(timeout_s, connect=5),
            ) as response:
                response.raise_for_status()
                body = io.BufferedReader(_Body(response.iter_bytes(_CHUNK)), _CHUNK)
                with tarfile.open(fileobj=body, mode="r|") as tar:
                    tar.extractall(landing, filter="data")
            moved = _move_into_place(landing, state_dir)
            log.info("copied %d stores from %s in %.1f s", moved, peer, time.monotonic() - started)
            return True
        except (httpx.HTTPError, tarfile.TarError, OSError) as exc:
            log.warning("no snapshot from %s: %s", peer, exc)
        finally:
            shutil.rmtree(landing, ignore_errors=True)
    return False


def _move_into_place(landing: Path, state_dir: Path) -> int:
    moved = 0
    for store in sorted(landing.glob("*/*/*")):
        target = state_dir / store.relative_to(landing)
        if target.exists():
            continue  # never overwrite a store this process has
        target.parent.mkdir(parents=True, exist_ok=True)
        store.rename(target)
        moved += 1
    return moved


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
