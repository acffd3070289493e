"""Codec: the typed PostingUpdate codec against the dict-level AvroCodec beneath it, and
against the codec as it was before (dicts, the schema parsed again on every call).

100,000 PostingUpdates with a ~1.5 KB description are encoded, then their bytes decoded,
by each path, three times over. The paths take turns every 1,000 records, so a busy
moment of the machine costs both alike. The dict path is given ready dicts, the typed
path ready PostingUpdates: the difference is what the types cost, `to_avro()` per encode
and `from_avro()` per decode. No server needed.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from typing import Any

import fastavro

from schemas import codec
from schemas.model import Op, Posting, PostingUpdate

N = 100_000
ROUNDS = 3
CHUNK = 1_000
DESCRIPTION = ("Design, build and run streaming pipelines with Kafka and Python. " * 24)[:1500]


def updates(n: int) -> list[PostingUpdate]:
    return [
        PostingUpdate(
            posting_id=f"posting-{i:08d}",
            version=i % 50,
            op=Op.CREATED if i % 50 == 0 else Op.UPDATED,
            idempotency_key=f"posting-{i:08d}:{i % 50}",
            request_id=f"{i:032x}",
            posting=Posting(f"Senior Stream Processing Engineer {i}", DESCRIPTION, "remote, EU hours"),
            last_update_time_millis=1_700_000_000_000 + i,
            accepted_at=1_700_000_000_000 + i,
            request_fingerprint=f"{i * 7919:032x}",
        )
        for i in range(n)
    ]


def _seconds(work: Callable[[Any], object], items: Sequence[Any]) -> float:
    started = time.perf_counter()
    for item in items:
        work(item)
    return time.perf_counter() - started


def race(paths: list[tuple[Callable[[Any], object], Sequence[Any]]]) -> list[float]:
    """Records per second of each (work, items) path, ROUNDS times, taking turns by chunk."""
    spent = [0.0] * len(paths)
    count = len(paths[0][1])
    for _ in range(ROUNDS):
        for start in range(0, count, CHUNK):
            for n, (work, items) in enumerate(paths):
                spent[n] += _seconds(work, items[start : start + CHUNK])
    return [ROUNDS * count / s for s in spent]


def before(avro: codec.AvroCodec) -> tuple[Callable[[dict[str, Any]], bytes], Callable[[bytes], object]]:
    """The codec as it was before records became types: dicts, and a schema fastavro parsed
    again on every call (it had been parsed without fastavro's hint)."""
    header, schema = avro.encode(updates(1)[0].to_avro())[:10], avro.schema

    def encode(record: dict[str, Any]) -> bytes:
        buffer = io.BytesIO()
        buffer.write(header)
        fastavro.schemaless_writer(buffer, schema, record)
        return buffer.getvalue()

    def decode(data: bytes) -> object:
        return fastavro.schemaless_reader(io.BytesIO(data[10:]), schema, schema)

    return encode, decode


def compare(n: int = N) -> dict[str, list[float]]:
    """{"encode" | "decode": [before, dict-level now, typed now] records/s}."""
    typed = codec.posting_updates()
    records = updates(n)
    dicts = [r.to_avro() for r in records]
    data = [typed.avro.encode(d) for d in dicts]
    old_encode, old_decode = before(typed.avro)
    assert data == [typed.encode(r) for r in records] == [old_encode(d) for d in dicts]  # the same bytes
    assert [typed.decode(d) for d in data[:1000]] == records[:1000]
    return {
        "encode": race([(old_encode, dicts), (typed.avro.encode, dicts), (typed.encode, records)]),
        "decode": race([(old_decode, data), (typed.avro.decode, data), (typed.decode, data)]),
    }


def main(n: int = N) -> None:
    size = len(codec.posting_updates().encode(updates(1)[0]))
    print(f"{n:,} PostingUpdates of {size:,} bytes, {ROUNDS} rounds, the paths taking turns")
    for step, (old, plain, typed) in compare(n).items():
        print(
            f"{step}: before (dicts, schema parsed per call) {old:,.0f} records/s; "
            f"now: dict-level AvroCodec {plain:,.0f}, typed codec {typed:,.0f} records/s "
            f"(typed/before {typed / old:.2f}, typed/dict {typed / plain:.2f})"
        )
