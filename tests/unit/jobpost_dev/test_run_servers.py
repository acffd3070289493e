"""`jobpost run` stops every server it launched, even one whose start was interrupted."""

from __future__ import annotations

import signal

import pytest

from jobpost_dev import run, stack


class FakeServer:
    def __init__(self, name: str, *, running: bool = False, interrupt: bool = False) -> None:
        self.name = name
        self.was_running = running
        self.interrupt = interrupt
        self.stopped = False

    def running(self) -> bool:
        return self.was_running

    def start(self, progress: object = None) -> bool:
        if self.interrupt:
            raise KeyboardInterrupt  # Ctrl-C while waiting for it to answer
        return True

    def stop(self) -> bool:
        self.stopped = True
        return True

    def stop_launched(self) -> bool:
        return self.stop()


def test_a_server_whose_start_was_interrupted_is_stopped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka = FakeServer("kafka", running=True)  # someone else's: left alone
    elasticsearch = FakeServer("elasticsearch", interrupt=True)
    monkeypatch.setattr(stack, "servers", lambda _settings: [kafka, elasticsearch])
    monkeypatch.setattr(signal, "signal", lambda *_args: None)
    monkeypatch.delenv("JOBPOST_RUN_SERVERS", raising=False)

    monkeypatch.setattr(run, "ports_needed", lambda *_: [])  # 8000 and the rest may be in use here

    assert run.run() == 0

    assert elasticsearch.stopped
    assert not kafka.stopped
    assert "stopped everything this run started" in capsys.readouterr().out
