"""Exactly once in the boards' own terms (issue 34.4): neither board reads an
Idempotency-Key, so a call whose answer is lost and that is sent again must come to one job
per posting by what each board counts as the same job (LinkedIn: the partner and
`externalJobPostingId`, a repeated CREATE recognised and carried on as an UPDATE; Indeed:
the client, `sourceName` and `jobPostingId`, an upsert). Versions are written straight to
jobpost.postings; the consumers are real processes; the boards are the sandbox."""

from collections import Counter

from tests.processes import wait_until

BOARDS = ("linkedin", "indeed")


def test_lost_answers_leave_one_job_per_posting_at_each_board_holding_its_last_version(
    sandbox, start_consumer, versions
):
    for board in BOARDS:
        sandbox.faults(board, "lose_response", probability=0.2)
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
