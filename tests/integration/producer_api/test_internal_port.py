"""With an internal port, the operators' endpoints are served there and not on the API's."""

from __future__ import annotations

import httpx

from jobpost_dev.processes import running
from tests.processes import ApiProcess, free_port, wait_until

TOKEN = "internal-port-token"


class SplitApi(ApiProcess):
    """An API whose readiness is asked on its internal port."""

    def __init__(self, *args: object, **env: str) -> None:
        self.internal_port = free_port()
        super().__init__(*args, JOBPOST_API_INTERNAL_PORT=str(self.internal_port), **env)  # type: ignore[arg-type]
        self.internal_url = f"http://127.0.0.1:{self.internal_port}"

    def wait_ready(self, timeout: float = 60.0, needs: tuple[str, ...] = ("kafka", "sequencer")) -> None:
        def ready() -> bool:
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                checks = httpx.get(f"{self.internal_url}/readyz", timeout=2).json()["checks"]
            except (httpx.HTTPError, ValueError, KeyError):
                return False
            return all(checks.get(n) for n in needs)

        wait_until(ready, timeout, f"{self.name} to be ready on its internal port")


def test_metrics_readiness_and_docs_are_served_on_the_internal_port_only(kafka, elasticsearch_url):
    with running(SplitApi(kafka, TOKEN, elasticsearch_url)) as api:
        for path in ("/metrics", "/readyz", "/docs", "/openapi.json"):
            assert httpx.get(f"{api.url}{path}", timeout=10).status_code == 404, path
            assert httpx.get(f"{api.internal_url}{path}", timeout=10).status_code == 200, path
        posting = api.client.create(title="Public")
        assert api.client.get(posting["id"])["title"] == "Public"
        internal = httpx.get(f"{api.internal_url}/postings/{posting['id']}", headers=api.headers, timeout=10)
        assert internal.status_code == 404
        assert httpx.get(f"{api.url}/healthz", timeout=10).status_code == 200
