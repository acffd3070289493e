"""Credentials: the file's format, its re-reading, development tokens (OIDC: test_oidc)."""

import hashlib
import json
import os
import time

import pytest

from producer_api.callers import EVERY_SCOPE, Caller, Scope
from producer_api.credentials import Credentials, CredentialsError, CredentialsFile, parse


def entry(name: str, token: str, employer: str = "acme", scopes=("postings:read",)) -> dict:
    return {
        "name": name,
        "token_sha256": hashlib.sha256(token.encode()).hexdigest(),
        "employer": employer,
        "scopes": list(scopes),
    }


def write(path, *entries: dict) -> None:
    path.write_text(json.dumps({"credentials": list(entries)}))
    # Another second's mtime, so a rewrite within the same tick is seen as a change too.
    stamp = time.time() + len(entries)
    os.utime(path, (stamp, stamp))


def test_a_token_of_the_file_is_its_credential_with_its_employer_and_scopes(tmp_path):
    path = tmp_path / "credentials.json"
    write(
        path,
        entry("ats-acme", "t-acme", scopes=["postings:read", "postings:write"]),
        entry("ops", "t-ops", "x", ["ops"]),
    )
    credentials = Credentials([], CredentialsFile(path))

    caller = credentials.caller("t-acme")
    assert caller is not None
    assert (caller.name, caller.employer, caller.scopes, caller.operator) == (
        "ats-acme",
        "acme",
        {Scope.READ, Scope.WRITE},
        False,
    )
    operator = credentials.caller("t-ops")
    assert operator is not None and operator.operator and operator.scopes == {Scope.OPS}
    assert credentials.caller("t-unknown") is None


def test_development_tokens_have_every_scope_of_the_default_employer():
    caller = Credentials(["dev-a", "dev-b"], None).caller("dev-b")
    assert caller is not None
    assert (caller.name, caller.employer, caller.operator, caller.scopes) == (
        "dev-token-2",
        "default",
        True,
        EVERY_SCOPE,
    )


def test_a_removed_entry_is_refused_once_the_file_is_read_again(tmp_path):
    path = tmp_path / "credentials.json"
    write(path, entry("a", "t-a"), entry("b", "t-b"))
    credentials = Credentials([], CredentialsFile(path, check_every_s=0))
    assert credentials.caller("t-b") is not None

    write(path, entry("a", "t-a"))
    assert credentials.caller("t-b") is None
    assert credentials.caller("t-a") is not None


def test_a_file_turned_invalid_refuses_every_token_of_it_until_it_is_valid(tmp_path):
    path = tmp_path / "credentials.json"
    write(path, entry("a", "t-a"))
    credentials = Credentials(["dev"], CredentialsFile(path, check_every_s=0))
    path.write_text("{not json")
    os.utime(path, (time.time() + 10, time.time() + 10))
    assert credentials.caller("t-a") is None
    assert credentials.caller("dev") is not None  # development tokens are not the file's

    write(path, entry("a", "t-a"))
    assert credentials.caller("t-a") is not None


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ('{"credentials": [{"name": "a"}]}', "token_sha256"),
        (json.dumps({"credentials": [entry("a", "t", scopes=["postings:delete"])]}), "postings:delete"),
        (json.dumps({"credentials": [entry("a", "t"), entry("a", "u")]}), "share a name"),
        (json.dumps({"credentials": [{**entry("a", "t"), "extra": 1}]}), "unknown fields"),
        (json.dumps({"credentials": [entry("a", "t", employer="")]}), "employer"),
        (json.dumps({"credentials": [entry("a", "t", employer="*")]}), "employer"),  # no wildcard
        (json.dumps({"credentials": [entry("a", "t", employer="acme corp")]}), "employer"),
        (json.dumps({"credentials": [entry("oidc:https://idp.test#svc", "t")]}), "name"),  # never an OIDC one
        ("[]", "credentials"),
    ],
)
def test_a_file_that_cannot_be_used_is_refused_naming_what_is_wrong(document, says):
    with pytest.raises(CredentialsError, match=says):
        parse(document, "creds.json")


@pytest.mark.parametrize("employer", ["*", "", "acme*", "a b", ".hidden", "-x", "é", "a" * 101, None])
def test_no_caller_can_be_made_for_an_employer_that_is_not_a_plain_identifier(employer):
    # One rule, whatever the source: the type refuses it.
    with pytest.raises(ValueError, match="employer"):
        Caller("someone", employer)


def test_an_operator_is_its_scope_and_still_one_employers_caller():
    operator = Caller("ops-1", "ops", frozenset({Scope.OPS}))
    assert operator.operator and operator.employer == "ops"
    assert operator.sees("acme") and operator.sees(None)
    assert not Caller("ats-acme", "acme", frozenset({Scope.READ, Scope.WRITE})).operator
