"""Every job a board refused, one JSON line each, appended to the file named by
`JOBPOST_SANDBOX_REFUSALS_LOG` (none: not written). Unlike the stats, the file outlives
`DELETE /_sandbox`, so a whole test run's refusals can be counted afterwards."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

ENV = "JOBPOST_SANDBOX_REFUSALS_LOG"


@dataclass
class RefusalLog:
    path: Path | None = None

    @classmethod
    def from_env(cls) -> RefusalLog:
        named = os.environ.get(ENV)
        return cls(Path(named) if named else None)

    def write(
        self, board: str, posting_id: str, where: str, status: int | str, message: str, at_ms: int
    ) -> None:
        if self.path is None:
            return
        line = {
            "at": at_ms,
            "board": board,
            "posting_id": posting_id,
            "where": where,
            "status": status,
            "message": message,
        }
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
