"""What a component's log last said went wrong, for the console of `make run`: a component
that keeps failing is reported with it, so the reason is not left in `.stack/logs/`."""

from __future__ import annotations

import json
import re
from pathlib import Path

LONGEST = 300  # characters of a line on the console
# A line of plain text that reports a failure: a logger's ERROR / CRITICAL level (uvicorn's
# "ERROR:    [Errno 98] ..."), the command line's "error: ...", a traceback's last line.
_FAILURE = re.compile(r"^(ERROR|CRITICAL|FATAL)\b|^error:|^[\w.]*(Error|Exception)\b|^Traceback")
_ERROR_LEVELS = ("error", "critical")


def last_error_line(log: Path, since: int = 0) -> str:
    """The last line that reports a failure in what `log` gained after byte `since`, else
    its last line; a JSON log line (runtime.logs) as its message and its exception's last
    line."""
    try:
        with log.open("rb") as file:
            file.seek(since)
            text = file.read().decode(errors="replace")
    except OSError as exc:
        return f"(its log {log} cannot be read: {exc.strerror})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(nothing in its log)"
    crash = _crash(lines)
    if crash is not None:
        return _shortened(crash)
    said = [_failure(line) for line in lines]
    found = next((line for line in reversed(said) if line is not None), None)
    return _shortened(found or _plain(lines[-1]))


def _crash(lines: list[str]) -> str | None:
    """An interpreter that crashed (a signal such as SIGABRT or SIGSEGV, with Python's fault
    handler on) ends its log with "Fatal Python error: ...", its threads' stacks and its
    extension modules: the fatal line, and the plain line printed just before it, which names
    the cause when a C library gave one (librdkafka's "*** file.c:line:function: assert: ...
    ***", glibc's "double free or corruption")."""
    fatal = next(
        (n for n in range(len(lines) - 1, -1, -1) if lines[n].startswith("Fatal Python error:")), None
    )
    if fatal is None:
        return None
    before = lines[fatal - 1] if fatal > 0 and _json(lines[fatal - 1]) is None else None
    return f"{lines[fatal]} after: {before}" if before else lines[fatal]


def _failure(line: str) -> str | None:
    entry = _json(line)
    if entry is None:
        return line if _FAILURE.search(line) else None
    if str(entry.get("level", "")).lower() not in _ERROR_LEVELS:
        return None
    message = str(entry.get("message", ""))
    error = str(entry.get("error", "")).strip().splitlines()
    return f"{message}: {error[-1]}" if error else message


def _plain(line: str) -> str:
    entry = _json(line)
    return str(entry.get("message", line)) if entry is not None else line


def _json(line: str) -> dict[str, object] | None:
    if not line.startswith("{"):
        return None
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _shortened(line: str) -> str:
    return line if len(line) <= LONGEST else line[: LONGEST - 3] + "..."
