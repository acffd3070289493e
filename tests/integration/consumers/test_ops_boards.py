"""GET /ops/boards (issue 36, item 4) with a real LinkedIn consumer against the sandbox: the
consumer's budgets (a per-minute budget, a daily cap), what it used of them this minute and
today as the sandbox counted it, its circuit closed; then with the sandbox's fault `error`
the circuit opens and the API shows it. The consumer publishes its status to
jobpost.board-status; the API (a real process) follows that topic."""

import httpx

from tests.integration.consumers.conftest import TOKEN
from tests.processes import running_api, wait_until

RECORDS_PER_MINUTE = 600
REQUESTS_PER_MINUTE = 300
RECORDS_PER_DAY = 1000
FIRST = [f"ops-board-{n}" for n in range(6)]
FAILING = [f"ops-board-down-{n}" for n in range(8)]


def test_ops_boards_shows_linkedins_budgets_their_use_as_the_sandbox_counted_it_and_its_circuit(
    sandbox, start_consumer, versions, kafka, elasticsearch_url
):
    start_consumer(
        "linkedin",
        JOBPOST_CONSUMER_RECORDS_PER_MINUTE=str(RECORDS_PER_MINUTE),
        JOBPOST_CONSUMER_REQUESTS_PER_MINUTE=str(REQUESTS_PER_MINUTE),
        JOBPOST_CONSUMER_LINKEDIN__RECORDS_PER_DAY=str(RECORDS_PER_DAY),
        JOBPOST_CONSUMER_STATUS_INTERVAL_S="1",
    )
    with running_api(kafka, TOKEN, elasticsearch_url, JOBPOST_API_SANDBOX_URL=sandbox.url) as api:

        def linkedin() -> dict:
            response = httpx.get(
                f"{api.url}/ops/boards", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
            )
            assert response.status_code == 200, response.text
            answer = response.json()
            assert answer["available"] is True and set(answer["boards"]) == {"linkedin", "indeed"}
            return answer["status"]["linkedin"]

        versions.write(FIRST)
        for posting_id in FIRST:
            wait_until(
                lambda: sandbox.applied("linkedin", posting_id) == [0], 60, f"{posting_id} at LinkedIn"
            )
        sent = sandbox.stats("linkedin")["records"]
        assert sent == len(FIRST)

        def counted() -> dict | None:
            board = linkedin()
            minute = {b["kind"]: b for b in board["per_minute"]}
            day = {b["kind"]: b for b in board["per_day"]}
            counted_all = minute["records"]["used"] == sent and day["records"]["used"] == sent
            # The sandbox applies a version when its task ends; the consumer confirms it at its
            # next task poll, so the status says every task confirmed a poll later.
            return board if counted_all and board["open_tasks"] == 0 else None

        board = wait_until(counted, 30, "/ops/boards to show the records the sandbox counted, confirmed")
        assert [(b["kind"], b["per_minute"]) for b in board["per_minute"]] == [
            ("records", RECORDS_PER_MINUTE),
            ("requests", REQUESTS_PER_MINUTE),
        ]
        minute_requests = board["per_minute"][1]["used"]
        assert (
            1 <= minute_requests <= sandbox.stats("linkedin")["calls"]
        )  # its calls; the sandbox also counts tokens
        records_a_day = next(b for b in board["per_day"] if b["kind"] == "records")
        assert records_a_day["per_day"] == RECORDS_PER_DAY and records_a_day["reset_at"] % 86_400_000 == 0
        assert (board["circuit"], board["paused"], board["open_tasks"]) == ("closed", False, 0)
        assert board["oldest_task_age_s"] is None  # every task confirmed
        [member] = board["members"]
        assert member["stale"] is False and member["share"] == 1.0 and member["circuit"] == "closed"

        sandbox.faults("linkedin", "error")
        versions.write(FAILING)
        board = wait_until(
            lambda: (found := linkedin())["circuit"] == "open" and found,
            60,
            "/ops/boards to show LinkedIn's circuit open",
        )
        assert board["circuit_reason"] and board["paused"] is True
        assert board["paused_reason"].startswith("linkedin is unavailable")
        assert board["members"][0]["circuit"] == "open" and board["members"][0]["stale"] is False
