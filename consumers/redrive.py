"""A redrive request as its posting's lane sees it: a record of `jobpost.<board>.redrive`
(`schemas.redrive.RedriveRequest`) made into an `Item` carrying the dead-lettered version.
What the lane then does with it is `consumers.rules.redrive_skipped` and
`consumers.lanes`; whoever asks only writes the request (`runtime.redrive`)."""

from __future__ import annotations

from confluent_kafka import Message

from consumers.items import Item
from runtime import records
from runtime.kafka import coordinates
from schemas import codec
from schemas.codec import SerializationError


def request_item(message: Message) -> Item:
    """The request as a lane item; PoisonRecord when it cannot be read, or when the version
    it carries is not the posting and version it names."""
    posting_id = records.text_key(message)
    value = message.value()
    if value is None:
        raise records.PoisonRecord("a redrive request without a value")
    try:
        request = codec.redrive_requests().decode(value)
        update = codec.posting_updates().decode(request.update)
    except SerializationError as exc:
        raise records.PoisonRecord(str(exc)) from exc
    if (request.posting_id, update.posting_id, update.version) != (posting_id, posting_id, request.version):
        raise records.PoisonRecord(
            f"the request for {request.posting_id!r} v{request.version} carries {update.posting_id!r} "
            f"v{update.version} under key {posting_id!r}"
        )
    _, partition, offset = coordinates(message)
    return Item(
        posting_id, update, partition, offset, message, request=request, timestamp_ms=message.timestamp()[1]
    )
