"""The tasks an asynchronous board (LinkedIn's `simpleJobPostingTasks`) has not reported
ended yet, and which to ask about next.

A version the board accepted is `Submitted(task_id)`; it is live only once its task
`SUCCEEDED`. The destination asks for many tasks in one call (the board takes several
ids), each task at most every `poll_interval_ms`, those asked about longest ago first. A
task still `IN_PROGRESS` (or left out of the answer) past `timeout_ms` from its submission
ends as timed out: the lane retries the version like a failed call.

Pure: time is passed in (milliseconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from consumers.boards.base import TaskOutcome, TaskState


@dataclass(slots=True)
class _Task:
    submitted_at: int
    asked_at: int  # when it was last asked about (its submission, before the first time)


class TaskBook:
    def __init__(self, poll_interval_ms: int, timeout_ms: int) -> None:
        self.poll_interval_ms = poll_interval_ms
        self.timeout_ms = timeout_ms
        self._tasks: dict[str, _Task] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def add(self, task_id: str, submitted_at: int) -> None:
        """Follow a task submitted at `submitted_at` (a restarted consumer's, from its
        delivery state, may be long ago: it is asked about at once)."""
        self._tasks[task_id] = _Task(submitted_at, submitted_at)

    def oldest_submitted_at(self) -> int | None:
        """When the oldest task followed was submitted; None when none is."""
        return min((t.submitted_at for t in self._tasks.values()), default=None)

    def forget(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)

    def due(self, now: int, limit: int) -> list[str]:
        """Up to `limit` tasks to ask about now, those asked about longest ago first."""
        ready = [(t.asked_at, task_id) for task_id, t in self._tasks.items() if self._ready(t, now)]
        return [task_id for _, task_id in sorted(ready)[:limit]]

    def next_due_in(self, now: int) -> int | None:
        """Ms until some task is due (0: now); None when none is followed."""
        if not self._tasks:
            return None
        return max(0, min(t.asked_at + self.poll_interval_ms for t in self._tasks.values()) - now)

    def answered(
        self, now: int, asked: Sequence[str], found: Mapping[str, TaskOutcome]
    ) -> list[tuple[str, TaskOutcome]]:
        """The board answered about `asked`: the tasks that ended (no longer followed)."""
        ended: list[tuple[str, TaskOutcome]] = []
        for task_id in asked:
            task = self._tasks.get(task_id)
            if task is None:
                continue
            task.asked_at = now
            outcome = found.get(task_id)
            if outcome is not None and outcome.state != TaskState.IN_PROGRESS:
                ended.append((task_id, outcome))
            elif now - task.submitted_at >= self.timeout_ms:
                waited = (now - task.submitted_at) / 1000
                why = "still in progress" if outcome is not None else "not known to the board"
                ended.append(
                    (
                        task_id,
                        TaskOutcome(TaskState.IN_PROGRESS, f"task {task_id} {why} after {waited:.0f} s"),
                    )
                )
        for task_id, _ in ended:
            del self._tasks[task_id]
        return ended

    def _ready(self, task: _Task, now: int) -> bool:
        return now - task.asked_at >= self.poll_interval_ms
