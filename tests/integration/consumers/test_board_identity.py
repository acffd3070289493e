"""Exactly once in the boards' own terms (issue 34.4): neither board reads an
Idempotency-Key, so a call whose answer is lost and that is sent again must come to one job
per posting by what each board counts as the same job (LinkedIn: the partner and
`externalJobPostingId`, a repeated CREATE recognised and carried on as an UPDATE; Indeed:
the client, `sourceName` and `jobPostingId`, an upsert). Versions are written straight to
jobpost.postings; the consumers are real processes; the boards are the sandbox."""

import json
from collections import Counter

from schemas.enums import ListingStatus
from schemas.model import Op
from tests.integration.consumers.conftest import state_history
from tests.postings import employers_document
from tests.processes import wait_until

BOARDS = ("linkedin", "indeed")


def test_lost_answers_leave_one_job_per_posting_at_each_board_holding_its_last_version(
    sandbox, start_consumer, versions
):
    # LinkedIn takes the 600 versions in about a dozen calls of up to 100 records: at a 20 %
    # chance one run in fourteen lost no answer at all (0.8 ** 12) and had nothing to check;
    # at one in two, one in four thousand.
    for board in BOARDS:
        sandbox.faults(board, "lose_response", probability=0.5)
        start_consumer(board)
    postings = [f"lost{n:03d}" for n in range(200)]
    for _ in range(3):
        versions.write(postings)

    def jobs(board: str) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {}
        for job in sandbox.jobs(board):
            found.setdefault(job["posting_id"], []).append(job)
        return found

    def settled(board: str) -> bool:
        held = jobs(board)
        return all(
            [job["title"] for job in held.get(p, [])] == [f"Role {p} v2"] and held[p][0]["status"] == "live"
            for p in postings
        )

    for board in BOARDS:
        try:
            wait_until(lambda: settled(board), 180, f"{board}: one live job per posting, its last version", 1)
        except AssertionError:
            held = jobs(board)
            counts = Counter(len(held.get(p, [])) for p in postings)
            wrong = {p: held.get(p) for p in postings if len(held.get(p, [])) != 1}
            raise AssertionError(
                f"{board}: jobs per posting {dict(counts)}; e.g. {list(wrong.items())[:2]}"
            ) from None
        lost = sandbox.stats(board)
        print(f"{board}: {lost}")  # the figures of the check
        for posting_id in postings:
            applied = sandbox.applied(board, posting_id)
            assert applied == sorted(applied), (board, posting_id, applied)  # never an older one after
        # calls sent again after a lost answer, each meeting the same job again
        assert sum(sandbox.posting(board, p)["duplicates"] for p in postings) > 0, board


def test_a_delete_after_the_employer_changed_its_indeed_source_name_expires_the_job_by_its_kept_id(
    sandbox, start_consumer, versions, kafka, tmp_path
):
    """Indeed knows a job by client, `sourceName` and `jobPostingId`; once the employer's
    `sourceName` changed, only the `sourcedPostingId` kept from the upsert still names the job.
    An upsert to learn it would make a second job under the new name and leave the first live."""
    job = listed_then_renamed(sandbox, start_consumer, versions, tmp_path, "renamed")

    versions.write(["renamed"], Op.DELETED)
    wait_until(lambda: not live_jobs(sandbox, "renamed"), 30, "no live Indeed job left for the posting", 0.2)
    held = [j for j in sandbox.jobs("indeed") if j["posting_id"] == "renamed"]
    assert [(j["id"], j["source_name"], j["status"]) for j in held] == [
        (job["id"], job["source_name"], "closed")
    ]  # the job it listed, expired; no second job made under the new name
    assert [s["operation"] for s in sandbox.posting("indeed", "renamed")["log"]] == ["UPSERT", "EXPIRE"]
    (state, *_) = reversed(state_history(kafka, "indeed")["renamed"])
    assert state.job is not None and state.job.status == ListingStatus.CLOSED, state
    assert state.job.job_id == job["id"]


def test_an_update_after_the_employer_changed_its_indeed_source_name_expires_the_job_it_replaced(
    sandbox, start_consumer, versions, kafka, tmp_path
):
    """An update upserted under the new `sourceName` is a new job at Indeed, with a new
    `sourcedPostingId`: the job it replaces is expired by its kept id in the same delivery, so
    one job is live for the posting (the new one, with the newest content); a delete then
    expires that one, and none is live."""
    first = listed_then_renamed(sandbox, start_consumer, versions, tmp_path, "moved")

    versions.write(["moved"])  # v1, upserted under the new name

    def replaced() -> list[dict] | None:
        held = {j["id"]: j for j in sandbox.jobs("indeed") if j["posting_id"] == "moved"}
        live = live_jobs(sandbox, "moved")
        return live if held[first["id"]]["status"] == "closed" and len(live) == 1 else None

    (new,) = wait_until(replaced, 30, "the first job expired, one live job for the posting", 0.2)
    assert (new["source_name"], new["title"]) == (RENAMED, "Role moved v1")
    assert new["id"] != first["id"]
    assert [s["operation"] for s in sandbox.posting("indeed", "moved")["log"]] == [
        "UPSERT",
        "UPSERT",
        "EXPIRE",
    ]
    (state, *_) = reversed(state_history(kafka, "indeed")["moved"])
    assert state.job is not None and (state.job.job_id, state.job.replaced_ids) == (new["id"], ())

    versions.write(["moved"], Op.DELETED)
    wait_until(lambda: not live_jobs(sandbox, "moved"), 30, "no live Indeed job left for the posting", 0.2)
    held = [(j["id"], j["status"]) for j in sandbox.jobs("indeed") if j["posting_id"] == "moved"]
    assert sorted(held) == sorted([(first["id"], "closed"), (new["id"], "closed")])


RENAMED = "Renamed Employer Ltd"


def listed_then_renamed(sandbox, start_consumer, versions, tmp_path, posting_id: str) -> dict:
    """The posting's job live at Indeed (returned), then the default employer's Indeed
    `sourceName` changed in the registry file, once the consumer has read it again (within a
    second of the change): a posting written since goes to Indeed under the new name, a new
    job there."""
    registry = tmp_path / "employers.json"
    registry.write_text(employers_document())
    start_consumer("indeed", JOBPOST_CONSUMER_INDEED__EMPLOYERS_FILE=str(registry))
    versions.write([posting_id])
    (job,) = wait_until(lambda: live_jobs(sandbox, posting_id), 60, "the job live at Indeed", 0.2)
    document = json.loads(employers_document())
    document["employers"]["default"]["indeed"]["source_name"] = RENAMED
    registry.write_text(json.dumps(document))

    def witness_renamed() -> bool:
        versions.write(["witness"])
        return any(j["source_name"] == RENAMED for j in live_jobs(sandbox, "witness"))

    wait_until(witness_renamed, 30, "a posting listed under the new sourceName", 0.5)
    return job


def live_jobs(sandbox, posting_id: str) -> list[dict]:
    return [j for j in sandbox.jobs("indeed") if j["posting_id"] == posting_id and j["status"] == "live"]
