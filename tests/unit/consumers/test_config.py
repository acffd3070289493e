"""A delivery consumer is for one job board, named as on the command line."""

import pytest
from pydantic import ValidationError

from consumers.config import ConsumerSettings
from schemas.model import Destination


def test_the_environment_names_the_board_as_before(monkeypatch):
    monkeypatch.setenv("JOBPOST_CONSUMER_DESTINATION", "indeed")
    settings = ConsumerSettings()
    assert settings.destination is Destination.INDEED
    assert (settings.group, settings.component) == ("jobpost-indeed", "indeed")


def test_search_is_a_destination_but_not_a_board():
    with pytest.raises(ValidationError, match="linkedin or indeed"):
        ConsumerSettings(destination=Destination.SEARCH)
