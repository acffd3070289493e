"""Codec: the typed PostingUpdate codec against the dict-level AvroCodec beneath it.

100,000 PostingUpdates with a ~1.5 KB description are encoded, then their bytes decoded,
by each path, three times over. The paths take turns every 1,000 records, so a busy
moment of the machine costs both alike. The dict path is given ready dicts, the typed
path ready PostingUpdates: the difference is what the types cost, `to_avro()` per encode
and `from_avro()` per decode. No server needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

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


def race(
    plain: Callable[[Any], object],
    typed: Callable[[Any], object],
    plain_in: Sequence[Any],
    typed_in: Sequence[Any],
) -> tuple[float, float]:
    """Records per second of each path over every item, ROUNDS times, taking turns by chunk."""
    spent = [0.0, 0.0]
    for _ in range(ROUNDS):
        for start in range(0, len(plain_in), CHUNK):
            spent[0] += _seconds(plain, plain_in[start : start + CHUNK])
            spent[1] += _seconds(typed, typed_in[start : start + CHUNK])
    done = ROUNDS * len(plain_in)
    return done / spent[0], done / spent[1]


def compare(n: int = N) -> dict[str, tuple[float, float]]:
    """{"encode" | "decode": (dict-level records/s, typed records/s)}."""
    typed = codec.posting_updates()
    records = updates(n)
    dicts = [r.to_avro() for r in records]
    data = [typed.avro.encode(d) for d in dicts]
    assert data == [typed.encode(r) for r in records]  # the same bytes either way
    assert [typed.decode(d) for d in data[:1000]] == records[:1000]
    return {
        "encode": race(typed.avro.encode, typed.encode, dicts, records),
        "decode": race(typed.avro.decode, typed.decode, data, data),
    }


def main(n: int = N) -> None:
    size = len(codec.posting_updates().encode(updates(1)[0]))
    print(f"{n:,} PostingUpdates of {size:,} bytes, {ROUNDS} rounds, the paths taking turns")
    for step, (plain, typed) in compare(n).items():
        extra_us = (1 / typed - 1 / plain) * 1e6
        print(f"{step}: dict-level AvroCodec {plain:,.0f} records/s, typed codec {typed:,.0f} records/s "
              f"(typed/dict {typed / plain:.2f}, {extra_us:+.1f} µs per record)")  # fmt: skip
