"""The sequencer's state on disk: a restart reads only what was written since, an empty or
broken store is rebuilt from the changelog, and decisions stay what the log says."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path

import httpx
from rocksdict import Options, Rdict

from runtime.kafka_clients import KafkaClients
from runtime.stores import PartitionStore
from schemas import codec
from schemas.model import Op, PostingUpdate
from schemas.partitioning import partition_for
from tests import postings
from tests.processes import ApiProcess, read_postings, running_api, versions_of

TOKEN = "test-token"


def restored_records(api: ApiProcess) -> float:
    """What this process read from the changelog to restore the sequencer's stores."""
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    found = re.search(r'^jobpost_state_restored_records_total\{store="sequencer"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def rebuilds(api: ApiProcess) -> float:
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    return sum(float(v) for v in re.findall(r"^jobpost_state_rebuilds_total\{[^}]*\} (\S+)$", text, re.M))


def test_a_restart_reads_only_the_changelog_written_since(kafka, topics, elasticsearch_url, tmp_path):
    state = str(tmp_path / "api")
    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_STATE_DIR=state) as api:
        ids = [api.client.create(title="First")["id"] for _ in range(30)]
        for posting_id in ids:
            api.client.replace(posting_id, title="Second")

    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_STATE_DIR=state) as api:
        assert restored_records(api) == 0  # its store was at the changelog's end
        assert api.client.replace(ids[0], title="Third")["version"] == 2

    # Someone else (a replica with a store of its own) writes meanwhile.
    with running_api(kafka, TOKEN, elasticsearch_url) as other:
        for posting_id in ids[:5]:
            other.client.replace(posting_id, title="By the other")

    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_STATE_DIR=state) as api:
        assert 5 <= restored_records(api) <= 10  # the other's five changes (and little more)
        assert api.client.replace(ids[0], title="Fourth")["version"] == 4
        assert api.client.replace(ids[9], title="Third")["version"] == 2
    assert versions_of(kafka, topics.postings, ids[0]) == [0, 1, 2, 3, 4]


def test_an_empty_state_folder_restores_versions_deletes_and_idempotency_keys(
    kafka, topics, elasticsearch_url
):
    with running_api(kafka, TOKEN, elasticsearch_url) as api:
        kept = api.client.create(title="First")["id"]
        assert api.client.replace(kept, title="Retried", key="k-1")["version"] == 1
        gone = api.client.create(title="Doomed")["id"]
        api.client.replace(gone, title="Last words")

    with running_api(kafka, TOKEN, elasticsearch_url) as fresh:  # a folder of its own, empty
        assert restored_records(fresh) >= 2
        retry = fresh.client.replace(kept, title="Retried", key="k-1")
        assert retry["version"] == 1  # the original answer
        fresh.client.replace(kept, title="Other body", key="k-1", expect=422)
        assert fresh.client.replace(kept, title="Next")["version"] == 2

        fresh.client.delete(gone)
        fresh.client.delete(gone, expect=410)

    records = [(k, v) for k, _, v in read_postings(kafka, topics.postings) if k == gone]
    # The DELETED version carries no text: compaction leaves none of the posting.
    assert [(v.version, v.op, v.posting.title) for _, v in records if v] == [
        (0, Op.CREATED, "Doomed"),
        (1, Op.UPDATED, "Last words"),
        (2, Op.DELETED, ""),
    ]
    assert records[-1][1] is None  # then the tombstone
    assert versions_of(kafka, topics.postings, kept) == [0, 1, 2]


def test_a_log_written_before_the_changelog_existed_is_derived_once(kafka, topics, elasticsearch_url):
    """Postings written by a release without the changelog (or straight to the log)."""
    producer = KafkaClients(kafka).producer()
    posting_id = str(uuid.uuid4())
    for version, op in enumerate((Op.CREATED, Op.UPDATED)):
        update = PostingUpdate(
            posting_id,
            version,
            op,
            f"{posting_id}:{version}",
            f"r{version}",
            postings.posting(version, title=f"Title {version}", notes=""),
            1000 + version,
            1000 + version,
            "",
        )
        producer.produce(
            topics.postings,
            key=posting_id,
            value=codec.posting_updates().encode(update),
            partition=partition_for(posting_id, kafka.partitions),
        )
    assert producer.flush(15) == 0

    with running_api(kafka, TOKEN, elasticsearch_url) as api:
        assert api.client.replace(posting_id, title="Title 2")["version"] == 2
        api.client.delete(posting_id)

    with running_api(kafka, TOKEN, elasticsearch_url) as fresh:  # now from the changelog
        assert restored_records(fresh) >= 1
        fresh.client.replace(posting_id, title="After", expect=410)
    titles = [v.posting.title for k, _, v in read_postings(kafka, topics.postings) if k == posting_id and v]
    assert titles == ["Title 0", "Title 1", "Title 2", ""]  # the DELETED version carries no text


def test_a_broken_store_is_rebuilt_never_served(kafka, topics, elasticsearch_url, tmp_path):
    state = tmp_path / "api"
    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_STATE_DIR=str(state)) as api:
        ids = [api.client.create(title="First")["id"] for _ in range(12)]
    stores = sorted((state / "sequencer" / topics.sequencer_state).iterdir())
    assert len(stores) == kafka.partitions

    # Partition 0: a checkpoint ahead of the log; partition 1: state of another cluster;
    # partition 2: a truncated file.
    ahead = PartitionStore(stores[0], _identity_of(stores[0]))
    ahead.write([], 10**9)
    ahead.close()
    foreign = PartitionStore(stores[1], "another-cluster/another-topic")
    foreign.write([(ids[0].encode(), b"not a state of this cluster")], 1)
    foreign.close()
    for manifest in stores[2].glob("MANIFEST-*"):
        manifest.write_bytes(b"")

    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_STATE_DIR=str(state)) as api:
        assert rebuilds(api) >= 3
        for posting_id in ids:
            assert api.client.replace(posting_id, title="Again")["version"] == 1
    shutil.rmtree(state)


def _identity_of(path: Path) -> str:
    """The identity a store at `path` was written with (its metadata)."""
    db = Rdict(str(path), Options(raw_mode=True))
    try:
        return str(json.loads(db[b"m:meta"])["identity"])
    finally:
        db.close()


def mispredictions(api: ApiProcess) -> float:
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    found = re.search(r"^jobpost_sequencer_mispredicted_offsets_total (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_version_placed_elsewhere_than_predicted_is_corrected_before_a_delete_needs_it(
    kafka, topics, elasticsearch_url
):
    with running_api(kafka, TOKEN, elasticsearch_url) as api:
        posting_id = api.client.create(title="Doomed")["id"]
        # Another writer appends to the posting's partition: the sequencer's next offset
        # there is no longer the one it predicts.
        partition = partition_for(posting_id, kafka.partitions)
        intruder = PostingUpdate(
            posting_id="intruder",
            version=0,
            op=Op.CREATED,
            idempotency_key="intruder:0",
            request_id="r",
            posting=postings.posting(1, title="Intruder"),
            last_update_time_millis=1,
            accepted_at=1,
        )
        producer = KafkaClients(kafka).producer()
        producer.produce(
            topics.postings, codec.posting_updates().encode(intruder), "intruder", partition=partition
        )
        assert producer.flush(10) == 0
        api.client.replace(posting_id, title="Last words")
        assert mispredictions(api) >= 1

    with running_api(kafka, TOKEN, elasticsearch_url) as fresh:  # restores from the changelog alone
        fresh.client.delete(posting_id)
    records = [v for k, _, v in read_postings(kafka, topics.postings) if k == posting_id and v]
    assert [(v.version, v.op, v.posting.title) for v in records][-1] == (2, Op.DELETED, "")  # no text
