"""The job-board sandbox: one HTTP server imitating LinkedIn's and Indeed's posting APIs as
strictly as their documentation describes them (each board's module says what it requires
and refuses, and where that is written), with their OAuth token endpoints, rate budgets,
batch limits, LinkedIn's asynchronous tasks, switchable faults and a control surface
(CONTRACT.md's "Job-board sandbox").

It applies each version once, by the element's idempotency key, counting a repeat in
`duplicates`, and keeps a request log per posting so a test can prove order.
"""

from jobpost_dev.sandbox.app import create_sandbox
from jobpost_dev.sandbox.faults import MALFORMED_ANSWERS

__all__ = ["MALFORMED_ANSWERS", "create_sandbox"]
