"""The job-board sandbox: one HTTP server imitating LinkedIn's and Indeed's posting APIs as
strictly as their documents describe them, written from those documents and apart from the
adapters it checks (it imports nothing of `consumers`, `listing` or `producer_api`). Each
board's package says what it requires and refuses, when, and where that is written.

A board identifies jobs as the real one does (LinkedIn: the partner and its
`externalJobPostingId`; Indeed: the client, `sourceName` and `jobPostingId`) and reads no
`Idempotency-Key`: what a repeat does is what the board makes of it. Around the boards: their
OAuth token endpoints, budgets per minute and per day, LinkedIn's asynchronous tasks and
listing status, Indeed's indexing, a clock tests can move, switchable faults, and a control
surface (CONTRACT.md's "Job-board sandbox"; docs/sandbox.md).
"""

from jobpost_dev.sandbox.app import create_sandbox
from jobpost_dev.sandbox.faults import MALFORMED_ANSWERS

__all__ = ["MALFORMED_ANSWERS", "create_sandbox"]
