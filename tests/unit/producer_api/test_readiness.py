"""What /readyz says of this replica's own sequencer member, from its status alone."""

from types import SimpleNamespace
from typing import Any

from producer_api.config import ApiSettings
from producer_api.readiness import Readiness
from sequencer.member import SequencerStatus


def test_the_sequencer_check_fails_while_the_member_has_no_session_or_restores():
    member = SimpleNamespace(status=SequencerStatus())
    nothing: Any = None  # the reply reader, the views and search play no part in this check
    readiness = Readiness(ApiSettings(), nothing, [], member, nothing)  # type: ignore[arg-type]
    assert readiness._own_member() == "this replica's sequencer member has no session"
    member.status = SequencerStatus(session_up=True, assigned=frozenset({0}), restoring=frozenset({1}))
    assert readiness._own_member() == "this replica's sequencer is restoring partitions [1]"
    member.status = SequencerStatus(session_up=True, assigned=frozenset({0, 1}))
    assert readiness._own_member() is None
    assert Readiness(ApiSettings(), nothing, [], None, nothing)._own_member() is None  # no member embedded


def test_a_member_that_gave_up_and_pauses_is_not_ready_without_quoting_its_error():
    member = SimpleNamespace(status=SequencerStatus(failed="KafkaError{code=_FENCED,val=-144,str=...}"))
    nothing: Any = None
    readiness = Readiness(ApiSettings(), nothing, [], member, nothing)  # type: ignore[arg-type]
    why = readiness._own_member()
    assert why is not None and "gave up" in why and "Kafka" not in why  # the log has Kafka's words
