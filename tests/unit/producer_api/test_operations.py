"""What the operations panel counts as resolved, and how often it computes its answers
(fakes for the views: no Kafka)."""

import asyncio

from producer_api.config import ApiSettings
from producer_api.operations import Operations, Recent
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination


class Deliveries:
    def __init__(self, delivered: dict[str, int]) -> None:
        self.delivered = delivered

    def get(self, posting_id: str) -> dict[Destination, DeliveryState]:
        if posting_id not in self.delivered:
            return {}
        state = DeliveryState(
            Destination.LINKEDIN, posting_id, DeliveryStatus.DELIVERED, self.delivered[posting_id]
        )
        return {Destination.LINKEDIN: state}


class Postings:
    def __init__(self, deleted_at: dict[str, int]) -> None:
        self.deleted = deleted_at

    def deleted_at(self, posting_id: str) -> int | None:
        return self.deleted.get(posting_id)


def test_a_letter_is_resolved_once_delivered_since_or_once_a_later_version_deleted_its_posting():
    ops = Operations(ApiSettings(tokens="t"), Deliveries({"p1": 3}), Postings({"p2": 5}))  # type: ignore[arg-type]
    linkedin = Destination.LINKEDIN
    assert ops._settled(linkedin, "p1", 3) and not ops._settled(linkedin, "p1", 4)
    assert ops._settled(linkedin, "p2", 4)  # deleted at 5: never sent again
    assert not ops._settled(linkedin, "p2", 5)  # the DELETE letter itself closes the posting
    assert not ops._settled(linkedin, "p3", 0)


def test_an_answer_is_computed_once_for_every_caller_within_its_age():
    computed = []

    async def compute() -> int:
        computed.append(1)
        await asyncio.sleep(0.01)
        return len(computed)

    async def scenario() -> list[int]:
        recent = Recent[int](max_age_s=60)
        return await asyncio.gather(*(recent.get(compute) for _ in range(50)))

    assert asyncio.run(scenario()) == [1] * 50 and computed == [1]
