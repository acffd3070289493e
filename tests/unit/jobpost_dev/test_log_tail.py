"""The line a failing component's log gives the console."""

from __future__ import annotations

import json
from pathlib import Path

from jobpost_dev.log_tail import LONGEST, last_error_line


def log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "api.log"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def entry(level: str, message: str, **more: str) -> str:
    return json.dumps({"time": "2026-01-01T00:00:00.000Z", "level": level, "message": message, **more})


def test_the_last_error_not_the_last_line(tmp_path: Path) -> None:
    path = log(
        tmp_path,
        "INFO:     Started server process [12]",
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address in use",
        "INFO:     Waiting for application shutdown.",
        "",
    )

    assert last_error_line(path) == (
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address in use"
    )


def test_a_json_error_is_its_message_and_its_exceptions_last_line(tmp_path: Path) -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nOSError: [Errno 98] Address in use'
    path = log(tmp_path, entry("info", "starting"), entry("error", "metrics server", error=trace))

    assert last_error_line(path) == "metrics server: OSError: [Errno 98] Address in use"


def test_the_command_lines_refusals_and_a_tracebacks_end_count_as_errors(tmp_path: Path) -> None:
    refused = log(tmp_path, "error: kafka at 127.0.0.1:9092 does not answer", "interrupted?")
    assert last_error_line(refused) == "error: kafka at 127.0.0.1:9092 does not answer"

    crashed = log(tmp_path, "Traceback (most recent call last):", '  File "m.py"', "ValueError: bad port")
    assert last_error_line(crashed) == "ValueError: bad port"


def test_without_an_error_its_last_line(tmp_path: Path) -> None:
    assert last_error_line(log(tmp_path, "one", entry("warning", "slow start"))) == "slow start"


def test_only_what_this_start_wrote(tmp_path: Path) -> None:
    path = log(tmp_path, "error: from the run before")
    since = path.stat().st_size
    with path.open("a") as more:
        more.write("started\n")

    assert last_error_line(path, since) == "started"
    assert last_error_line(tmp_path / "api.log", path.stat().st_size) == "(nothing in its log)"


def test_a_long_line_is_cut(tmp_path: Path) -> None:
    said = last_error_line(log(tmp_path, "error: " + "x" * 1000))

    assert len(said) == LONGEST and said.endswith("...")


def test_a_missing_log_is_said(tmp_path: Path) -> None:
    assert last_error_line(tmp_path / "none.log").startswith(
        f"(its log {tmp_path / 'none.log'} cannot be read"
    )


def test_a_crashed_interpreter_is_its_fatal_error_and_what_the_library_printed_before_it(
    tmp_path: Path,
) -> None:
    path = log(
        tmp_path,
        entry("info", "sequencer session 3 started"),
        "*** rdkafka_broker.c:2800:rd_kafka_broker_fetch_reply: assert: rkb->rkb_fetching > 0 ***",
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f3c2effd6c0 (most recent call first):",
        '  File "/app/sequencer/session.py", line 120 in commit',
        "Extension modules: confluent_kafka.cimpl, fastavro._read, multidict._multidict (total: 3)",
    )

    assert last_error_line(path) == (
        "Fatal Python error: Aborted after: *** rdkafka_broker.c:2800:rd_kafka_broker_fetch_reply:"
        " assert: rkb->rkb_fetching > 0 ***"
    )


def test_a_crash_with_nothing_printed_before_it_is_its_fatal_error(tmp_path: Path) -> None:
    path = log(
        tmp_path,
        entry("error", "view of jobpost.postings failed; resuming it", error="KafkaException: _TRANSPORT"),
        "Fatal Python error: Segmentation fault",
        "Extension modules: confluent_kafka.cimpl (total: 1)",
    )

    assert last_error_line(path) == "Fatal Python error: Segmentation fault"
