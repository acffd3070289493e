"""Entry point: `jobpost sequencer` (a sequencer member alone, without the API)."""

from __future__ import annotations

import logging
import signal

from runtime.topics import check_at_start
from sequencer.config import SequencerSettings
from sequencer.member import Sequencer, run_or_exit


def run_sequencer() -> None:
    settings = SequencerSettings()
    check_at_start(settings.kafka)
    sequencer = Sequencer(settings)

    def _stop(_signum: int, _frame: object) -> None:
        sequencer.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    logging.getLogger(__name__).info("sequencer starting")
    run_or_exit(sequencer)
