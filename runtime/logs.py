"""Structured logs: one JSON object per line, carrying posting_id and version when known.

log.info("delivered", extra={"posting_id": pid, "version": 3})
"""

from __future__ import annotations

import json
import logging
import sys
import time

CONTEXT_FIELDS = (
    "posting_id",
    "version",
    "destination",
    "group",
    "partition",
    "offset",
    "component",
    "audit",
)


class JsonFormatter(logging.Formatter):
    def __init__(self, component: str) -> None:
        super().__init__()
        self.component = component

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "component": self.component,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(component: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(component))
    logging.basicConfig(level=level, handlers=[handler], force=True)
