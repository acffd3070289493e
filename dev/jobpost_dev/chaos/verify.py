"""What the fault run checks from outside the code under test: the postings topic, what
each board holds (the sandbox), the index, the dead-letter topics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from jobpost_dev.chaos.load import Ledger
from runtime import records
from runtime.kafka import KafkaSettings
from runtime.replay import replay
from schemas.enums import Op
from schemas.model import PostingUpdate
from schemas.topics import BOARDS, Component, Topics


@dataclass(frozen=True)
class Accepted:
    version: int
    op: str
    request_id: str
    marker: str  # the notes of the request: an unkeyed attempt's token
    partition: int = -1  # of jobpost.postings
    title: str = ""  # what the boards tell versions apart by (the run varies nothing else)


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)  # acknowledged, not in the log
    duplicated: list[str] = field(default_factory=list)  # one request applied twice
    reordered: list[str] = field(default_factory=list)  # a posting's versions not 0, 1, 2, ... in the log
    unacknowledged: list[str] = field(default_factory=list)  # in the log, never acknowledged (client gave up)
    applied_after_503: list[str] = field(default_factory=list)  # answered 503, yet in the log: a lie
    unknown_applied: int = 0  # unkeyed writes left unknown (504, lost answer) that the log holds
    boards: dict[str, list[str]] = field(default_factory=dict)  # board -> postings not as accepted
    board_samples: list[str] = field(default_factory=list)  # a few of them, what the board holds
    index: list[str] = field(default_factory=list)  # postings not at their last version
    dead_letters: dict[str, int] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return not any(self.boards.values()) and not self.index


def log_of(kafka: KafkaSettings) -> dict[str, list[Accepted]]:
    """Every posting's accepted versions, in log order."""
    found: dict[str, list[Accepted]] = {}

    def take(message: Any) -> None:
        _, update = records.posting_update(message)
        if update is not None:
            found.setdefault(update.posting_id, []).append(accepted(update, message.partition()))

    replay(kafka, Topics(kafka.topic_prefix).postings, range(kafka.partitions), take, timeout_s=300)
    return found


def accepted(update: PostingUpdate, partition: int = -1) -> Accepted:
    """One version as the verdict reads it. A DELETED version carries no text (no
    marker of its own)."""
    marker = "" if update.op == Op.DELETED else update.posting.notes
    return Accepted(update.version, update.op, update.request_id, marker, partition, update.posting.title)


def check_log(ledger: Ledger, log: dict[str, list[Accepted]]) -> Verdict:
    verdict = Verdict()
    applied = Counter(a.request_id for versions in log.values() for a in versions)
    for key, ack in ledger.acked.items():
        applied_as = {a.version for a in log.get(ack.posting_id, []) if a.request_id == key}
        if ack.version not in applied_as:
            verdict.lost.append(key)
    marked = Counter(a.marker for versions in log.values() for a in versions if a.marker)
    at = {(p, a.marker): a.version for p, versions in log.items() for a in versions if a.marker}
    verdict.lost += [
        m for m, ack in ledger.acked_unkeyed.items() if at.get((ack.posting_id, m)) != ack.version
    ]
    verdict.applied_after_503 = [m for m in ledger.not_applied if m in marked]
    verdict.unknown_applied = sum(1 for m in ledger.unknown if m in marked)
    verdict.duplicated = [key for key, n in applied.items() if n > 1] + [
        m for m, n in marked.items() if n > 1
    ]
    for posting_id, versions in log.items():
        if [a.version for a in versions] != list(range(len(versions))):
            verdict.reordered.append(posting_id)
    verdict.unacknowledged = [k for k in applied if k.startswith("chaos-") and k not in ledger.acked]
    return verdict


def check_outside(
    verdict: Verdict, log: dict[str, list[Accepted]], sandbox: str, es: str, alias: str
) -> None:
    """What each board and the index hold, against the log (refreshes those parts of the verdict)."""
    with httpx.Client(timeout=10) as http:
        for board in BOARDS:
            verdict.boards[board] = [
                p for p, versions in log.items() if not _board_matches(http, sandbox, board, p, versions)
            ]
        verdict.board_samples = [
            _described(http, sandbox, board, p, log[p]) for board in BOARDS for p in verdict.boards[board][:2]
        ]
        ids = list(log)
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            response = http.post(f"{es}/{alias}/_mget", json={"ids": ids[start : start + 500]})
            if response.status_code != 200:
                verdict.index = ids
                return
            found |= {d["_id"]: d.get("_source", {}) for d in response.json()["docs"] if d.get("found")}
    verdict.index = [
        p
        for p, versions in log.items()
        if (doc := found.get(p)) is None
        or doc.get("version") != versions[-1].version
        or (doc.get("status") == "deleted") != (versions[-1].op == "DELETED")
    ]


def _board_matches(
    http: httpx.Client, sandbox: str, board: str, posting_id: str, log: list[Accepted]
) -> bool:
    """The board holds the posting as accepted, in the board's own terms: neither board knows
    our version numbers, so the sandbox numbers the distinct contents it applied in the order
    it first saw them (a version sent again after a lost answer, or an unkeyed write applied
    twice with the same text, is one content). Every content reached it once, in order, and
    its one job holds the last version's title, open (closed after a delete)."""
    response = http.get(f"{sandbox}/_sandbox/{board}/postings/{posting_id}")
    jobs = http.get(f"{sandbox}/_sandbox/{board}/jobs", params={"posting_id": posting_id})
    deleted = log[-1].op == "DELETED"
    if response.status_code == 404 and deleted and jobs.status_code == 200 and not jobs.json()["jobs"]:
        return True  # deleted before any version reached the board: nothing to close
    if response.status_code != 200 or jobs.status_code != 200:
        return False
    seen = response.json()
    versions: list[int] = seen["versions"]
    if versions != sorted(set(versions)) or versions != list(range(len(versions))):
        return False  # a content applied twice, or an older one after a newer
    held = jobs.json()["jobs"]
    if len(held) != 1:
        return False
    (job,) = held
    if deleted:
        # Updates a queued delete superseded may be skipped (the job closes holding the last
        # one it got); the close itself must be there.
        return job["status"] == "closed" and job["title"] in {a.title for a in log}
    contents = set(a.title for a in log)
    return len(versions) == len(contents) and job["title"] == log[-1].title and job["status"] != "closed"


def _described(http: httpx.Client, sandbox: str, board: str, posting_id: str, log: list[Accepted]) -> str:
    """What the board holds of a posting that does not match, beside what was accepted."""
    seen = http.get(f"{sandbox}/_sandbox/{board}/postings/{posting_id}")
    jobs = http.get(f"{sandbox}/_sandbox/{board}/jobs", params={"posting_id": posting_id})
    held = seen.json() if seen.status_code == 200 else {}
    sent = [(s["version"], s["operation"], s["state"]) for s in held.get("log", [])]
    found = (
        [(j["status"], j["title"]) for j in jobs.json().get("jobs", [])] if jobs.status_code == 200 else []
    )
    accepted = [(a.version, a.op, a.title) for a in log]
    versions = held.get("versions")
    return f"{board} {posting_id}: accepted {accepted}; board versions {versions}, log {sent}; jobs {found}"


def count_dead_letters(kafka: KafkaSettings) -> dict[str, int]:
    topics = Topics(kafka.topic_prefix)
    counts: dict[str, int] = {}
    for group in Component:
        letters: list[Any] = []
        replay(kafka, topics.dlq(group), range(kafka.partitions), letters.append)
        counts[group] = len(letters)
    return counts
