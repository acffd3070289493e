"""Credentials: the file's format, its re-reading, development tokens, and OIDC claims."""

import asyncio
import hashlib
import json
import os
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from producer_api.callers import EVERY_SCOPE, Scope
from producer_api.credentials import Credentials, CredentialsError, CredentialsFile, parse
from producer_api.oidc import OidcSettings, OidcTokens


def entry(name: str, token: str, employer: str = "acme", scopes=("postings:read",)) -> dict:
    return {"name": name, "token_sha256": hashlib.sha256(token.encode()).hexdigest(), "employer": employer,
            "scopes": list(scopes)}  # fmt: skip


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
        "ats-acme", "acme", {Scope.READ, Scope.WRITE}, False
    )  # fmt: skip
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
        ("[]", "credentials"),
    ],
)
def test_a_file_that_cannot_be_used_is_refused_naming_what_is_wrong(document, says):
    with pytest.raises(CredentialsError, match=says):
        parse(document, "creds.json")


KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
SETTINGS = OidcSettings(jwks_url="http://127.0.0.1:1/jwks", issuer="https://idp.test", audience="jobpost")


class Keys:
    """The JWKS as PyJWKClient would give it, without a server: the one key, by its kid."""

    def get_signing_key_from_jwt(self, token: str) -> jwt.PyJWK:
        if jwt.get_unverified_header(token).get("kid") != "k1":
            raise jwt.PyJWKClientError("Unable to find a signing key that matches")
        return jwt.PyJWK(json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key())) | {"kid": "k1"})


def token(key=KEY, kid="k1", **claims) -> str:
    body = {"iss": "https://idp.test", "aud": "jobpost", "exp": int(time.time()) + 60, "sub": "svc-acme",
            "employer": "acme", "scope": "postings:read ops openid"} | claims  # fmt: skip
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": kid})


def caller_of(value: str):
    tokens = OidcTokens(SETTINGS)
    tokens.keys = Keys()  # type: ignore[assignment]
    return asyncio.run(tokens.caller(value))


def test_a_jwt_of_the_issuer_is_its_subject_with_the_employer_and_scopes_of_its_claims():
    caller = caller_of(token())
    assert caller is not None
    assert (caller.name, caller.employer, caller.scopes, caller.operator) == (
        "svc-acme", "acme", {Scope.READ, Scope.OPS}, True
    )  # fmt: skip


@pytest.mark.parametrize(
    "refused",
    [
        token(exp=int(time.time()) - 120),  # expired (beyond the 30 s leeway)
        token(aud="another-api"),
        token(iss="https://another.idp"),
        token(
            key=rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ),  # the kid's key did not sign it
        token(kid="k2"),  # a key the JWKS does not have
        token(employer=None),
        jwt.encode({"sub": "x"}, "s" * 32, algorithm="HS256", headers={"kid": "k1"}),  # a shared secret
    ],
    ids=["expired", "audience", "issuer", "wrong-key", "unknown-kid", "no-employer", "hs256"],
)
def test_a_jwt_failing_any_check_is_no_caller(refused):
    assert caller_of(refused) is None
