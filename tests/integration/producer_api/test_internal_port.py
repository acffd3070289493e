"""With an internal port, the operators' endpoints are served there and not on the API's."""

from __future__ import annotations

import httpx

from jobpost_dev.processes import running
from tests.processes import SplitApi

TOKEN = "internal-port-token"


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
