"""The one way a test talks to the API.

Every call returns the parsed body of the answer (an `Answer`: a dict that also knows its
status) once its status is the one `expect` names (by default the call's success status;
a call that may get several names them all), so a test reads as what it asks and what it
gets back. What the contract promises of every answer is checked on each one: a problem
(a status of 400 or more) is `application/problem+json` naming its status, with no stack
trace; a posting carries `ETag: "<version>"`, and a created one `Location: /postings/<id>`.
Calls the shortcuts do not cover (the operations panel, a body that is not JSON) go
through `request`, which checks the same.

`ApiProcess.client` and the end-to-end `System.client` hand one out; one client may be
used from several threads at once (httpx's client is thread-safe).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import httpx

from tests import postings

# A field the posting sends by default, left out with `ABSENT` (a body without a title).
ABSENT: Any = object()
POSTING = postings.body(0)  # a listable posting (tests/postings.py)


class Answer(dict[str, Any]):
    """An answer's parsed body (every body of this API is a JSON object), with the status it
    came with, for a call that expects more than one."""

    def __init__(self, body: dict[str, Any], status_code: int) -> None:
        super().__init__(body)
        self.status_code = status_code


class ApiClient:
    def __init__(self, url: str, token: str | None, timeout_s: float = 30) -> None:
        self.url = url
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def create(
        self, *, key: str | None = None, expect: int | Collection[int] = 201, **posting: Any
    ) -> Answer:
        """POST /postings with the default posting changed by `posting`; `key` is the
        Idempotency-Key."""
        return self.request("POST", "/postings", json=_body(posting), headers=_conditions(key), expect=expect)

    def replace(
        self,
        posting_id: str,
        *,
        if_match: int | str | None = None,
        key: str | None = None,
        expect: int | Collection[int] = 200,
        **posting: Any,
    ) -> Answer:
        """PUT /postings/{id}; `if_match` a version (sent as `"<n>"`) or a header value."""
        headers = _conditions(key, if_match)
        return self.request(
            "PUT", f"/postings/{posting_id}", json=_body(posting), headers=headers, expect=expect
        )

    def delete(
        self,
        posting_id: str,
        *,
        if_match: int | str | None = None,
        key: str | None = None,
        expect: int | Collection[int] = 200,
    ) -> Answer:
        return self.request(
            "DELETE", f"/postings/{posting_id}", headers=_conditions(key, if_match), expect=expect
        )

    def get(self, posting_id: str, *, strong: bool = False, expect: int | Collection[int] = 200) -> Answer:
        params = {"consistency": "strong"} if strong else {}
        return self.request("GET", f"/postings/{posting_id}", params=params, expect=expect)

    def deliveries(self, posting_id: str, *, expect: int | Collection[int] = 200) -> Answer:
        return self.request("GET", f"/postings/{posting_id}/deliveries", expect=expect)

    def timeline(self, posting_id: str, *, expect: int | Collection[int] = 200) -> Answer:
        return self.request("GET", f"/postings/{posting_id}/timeline", expect=expect)

    def search(
        self,
        q: str | None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        expect: int | Collection[int] = 200,
    ) -> Answer:
        """GET /postings?q=…; `q` None leaves the parameter out."""
        given = {"q": q, "limit": limit, "cursor": cursor}
        params = {name: value for name, value in given.items() if value is not None}
        return self.request("GET", "/postings", params=params, expect=expect)

    def request(self, method: str, path: str, *, expect: int | Collection[int], **options: Any) -> Answer:
        """Any call (httpx's `options`: json, content, params, headers); the parsed body,
        once the status is one `expect` names and the answer keeps the contract."""
        response = self.http.request(method, path, **options)
        expected = (expect,) if isinstance(expect, int) else tuple(expect)
        assert response.status_code in expected, (
            f"{method} {path}: {response.status_code}, expected {expect}: {response.text[:2000]}"
        )
        body = Answer(response.json(), response.status_code)
        if response.status_code >= 400:
            _check_problem(response, body)
        elif {"id", "version", "title"} <= body.keys():
            _check_posting(response, body)
        return body


def _body(changes: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in {**POSTING, **changes}.items() if value is not ABSENT}


def _conditions(key: str | None, if_match: int | str | None = None) -> dict[str, str]:
    headers = {}
    if key is not None:
        headers["Idempotency-Key"] = key
    if if_match is not None:
        headers["If-Match"] = f'"{if_match}"' if isinstance(if_match, int) else if_match
    return headers


def _check_problem(response: httpx.Response, body: Answer) -> None:
    assert response.headers["content-type"] == "application/problem+json", response.headers
    assert body["status"] == response.status_code, body
    assert body["type"] and body["title"] and body["detail"], body
    assert "Traceback" not in response.text


def _check_posting(response: httpx.Response, body: dict[str, Any]) -> None:
    assert response.headers.get("ETag") == f'"{body["version"]}"', (response.headers, body)
    if response.status_code == 201:
        assert response.headers["Location"] == f"/postings/{body['id']}", response.headers
