"""The live listing comes back to the employer (issue 36), in the system as `make run` starts
it: a posting goes live at both boards, `/deliveries` shows each board's id and URL as the
sandbox gave them, and the employer's endpoint (a real HTTP server) is told, signed; then
LinkedIn closes the job on its own, and within the status check's interval `/deliveries`
says so with LinkedIn's words and the endpoint gets `listing.closed_by_board`, verified with
`standardwebhooks`."""

import httpx

from tests.e2e.conftest import started_system
from tests.integration.webhooks.receiver import Receiver
from tests.processes import wait_until


def test_a_job_the_board_closes_on_its_own_is_shown_and_pushed_to_the_employer(
    kafka, elasticsearch_url, unique
):
    # The boards' status read back every second, live jobs included (900 s by default).
    with started_system(
        kafka, elasticsearch_url, unique, JOBPOST_CONSUMER_LIVE_CHECK_INTERVAL_S="1"
    ) as system:
        receiver = Receiver().start()
        try:
            made = system.client.request("POST", "/webhooks", json={"url": receiver.url}, expect=201)
            receiver.secrets.append(made["secret"])
            posting_id = system.client.create(title="Site Reliability Engineer")["id"]

            def listing(board: str) -> dict | None:
                return system.client.deliveries(posting_id)["destinations"][board]["listing"]

            wait_until(
                lambda: all((listing(b) or {}).get("status") == "live" for b in ("linkedin", "indeed")),
                60,
                "live at both boards",
            )
            jobs = {
                board: httpx.get(
                    f"{system.sandbox}/_sandbox/{board}/jobs", params={"posting_id": posting_id}
                ).json()["jobs"]
                for board in ("linkedin", "indeed")
            }
            for board in ("linkedin", "indeed"):
                (job,) = jobs[board]
                assert (listing(board)["id"], listing(board)["url"]) == (job["id"], job["url"]), board
            assert listing("linkedin")["url"].startswith("https://www.linkedin.com/jobs/view/")

            def told(kind: str, board: str) -> list:
                return [
                    d
                    for d in receiver.first_of_each()
                    if d.event["type"] == kind
                    and d.event["data"].get("board") == board
                    and d.event["data"]["posting_id"] == posting_id
                ]

            wait_until(
                lambda: told("listing.live", "linkedin") and told("listing.live", "indeed"),
                60,
                "listing.live from both boards",
            )
            (live,) = told("listing.live", "linkedin")
            assert live.event["data"]["listing"]["url"] == jobs["linkedin"][0]["url"]

            closed = httpx.put(
                f"{system.sandbox}/_sandbox/linkedin/jobs/{jobs['linkedin'][0]['id']}/close",
                json={"reason": "MEMBER_REPORTED"},
            )
            assert closed.status_code == 200, closed.text
            wait_until(
                lambda: listing("linkedin")["status"] == "closed_by_board", 30, "LinkedIn's close seen"
            )
            assert (
                listing("linkedin")["reason"]
                == "LinkedIn automatically closes jobs that are reported multiple times"
            )
            assert listing("indeed")["status"] == "live"  # the other board's job is its own

            wait_until(
                lambda: told("listing.closed_by_board", "linkedin"), 60, "listing.closed_by_board pushed"
            )
            (pushed,) = told("listing.closed_by_board", "linkedin")
            assert pushed.verified_with == [0]  # signed with the endpoint's secret, per Standard Webhooks
            assert pushed.event["data"]["listing"]["reason"] == listing("linkedin")["reason"]
            types = [
                d.event["type"]
                for d in receiver.first_of_each()
                if d.event["data"].get("board") == "linkedin"
            ]
            assert types.index("listing.live") < types.index("listing.closed_by_board")  # in order
        finally:
            receiver.stop()
