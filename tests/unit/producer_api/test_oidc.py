"""OIDC bearer tokens against a real JWKS served over HTTP from this test: what a token's
claims make of its caller, every token refused with a reason, a key removed from the JWKS
refused within the refresh interval, and the settings that are refused before start."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import ValidationError

from producer_api.callers import Caller, Scope, Unauthenticated
from producer_api.oidc import OidcSettings, OidcTokens

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ISSUER = "https://idp.test"


class Issuer(http.server.ThreadingHTTPServer):
    """The issuer's JWKS endpoint; `keys` (kid -> private key) says which public keys it lists."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Jwks)
        self.keys: dict[str, rsa.RSAPrivateKey] = {"k1": KEY}
        self.fetches = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/jwks"


class _Jwks(http.server.BaseHTTPRequestHandler):
    server: Issuer

    def do_GET(self) -> None:
        self.server.fetches += 1
        keys = [
            json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())) | {"kid": kid, "use": "sig"}
            for kid, key in self.server.keys.items()
        ]
        body = json.dumps({"keys": keys}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    server = Issuer()
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def tokens(issuer: Issuer, **settings: object) -> OidcTokens:
    return OidcTokens(
        OidcSettings(jwks_url=issuer.url, issuer=ISSUER, audience="jobpost", allow_http_jwks=True, **settings)  # type: ignore[arg-type]
    )


def token(key=KEY, kid="k1", algorithm="RS256", **claims) -> str:
    body = {
        "iss": ISSUER,
        "aud": "jobpost",
        # An hour: the parametrized tokens are made when the tests are collected, minutes before
        # they run in a full unit run.
        "exp": int(time.time()) + 3600,
        "sub": "svc-acme",
        "employer": "acme",
        "scope": "postings:read ops openid",
    } | claims
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, algorithm=algorithm, headers={"kid": kid}
    )


def caller_of(oidc: OidcTokens, value: str) -> Caller:
    return asyncio.run(oidc.caller(value))


def test_a_jwt_of_the_issuer_is_its_namespaced_subject_with_the_employer_and_scopes_of_its_claims(issuer):
    caller = caller_of(tokens(issuer), token())
    # The subject within its issuer: never equal to a file credential's name (an identifier).
    assert (caller.name, caller.employer, caller.scopes, caller.operator) == (
        "oidc:https://idp.test#svc-acme",
        "acme",
        {Scope.READ, Scope.OPS},
        True,
    )


# Each token is made when its case runs: made at collection, a token valid for 60 s had
# expired by the time a long suite reached it, and was refused for that instead.
@pytest.mark.parametrize(
    ("refused", "reason"),
    [
        (lambda: token(exp=int(time.time()) - 120), "invalid_jwt"),  # expired, beyond the 30 s leeway
        (lambda: token(aud="another-api"), "invalid_jwt"),
        (lambda: token(iss="https://another.idp"), "invalid_jwt"),
        (lambda: token(key=OTHER), "invalid_jwt"),  # the kid's key did not sign it
        (lambda: token(kid="k2"), "invalid_jwt"),  # a key the JWKS does not have
        (lambda: token(key=EC_KEY, algorithm="ES256"), "invalid_jwt"),  # an ES256 header, the kid an RSA key
        (lambda: jwt.encode({"sub": "x"}, "s" * 32, algorithm="HS256", headers={"kid": "k1"}), "invalid_jwt"),
        (lambda: token(employer=None), "jwt_claims"),
        (lambda: token(employer="*"), "jwt_claims"),  # the wildcard is no employer
        (lambda: token(employer="acme corp"), "jwt_claims"),
        (lambda: token(sub=None), "jwt_claims"),
        (lambda: "not.a.jwt", "invalid_jwt"),
    ],
    ids=[
        "expired",
        "audience",
        "issuer",
        "wrong-key",
        "unknown-kid",
        "es256-rsa-key",
        "hs256",
        "no-employer",
        "wildcard-employer",
        "employer-with-space",
        "no-subject",
        "garbage",
    ],
)
def test_a_jwt_failing_any_check_is_refused_with_its_reason(issuer, refused, reason):
    with pytest.raises(Unauthenticated) as caught:
        caller_of(tokens(issuer), refused())
    assert caught.value.reason == reason


def test_a_key_removed_from_the_jwks_is_refused_within_the_refresh_interval(issuer):
    oidc = tokens(issuer, jwks_refresh_s=0.2)
    signed = token()
    assert caller_of(oidc, signed).employer == "acme"
    issuer.keys = {"k2": OTHER}  # the issuer rotated k1 out
    removed = time.monotonic()
    deadline = removed + 5
    while True:
        try:
            caller_of(oidc, signed)
        except Unauthenticated as exc:
            assert exc.reason == "invalid_jwt"
            break
        assert time.monotonic() < deadline, "the removed key still trusted after 5 s"
        time.sleep(0.05)
    assert time.monotonic() - removed < 0.2 + 0.5  # the interval, and a fetch
    assert caller_of(oidc, token(key=OTHER, kid="k2")).employer == "acme"  # the new key works


def test_an_unknown_kid_refetches_the_jwks_at_most_once_per_cooldown(issuer):
    oidc = tokens(issuer)
    caller_of(oidc, token())
    for _ in range(20):
        with pytest.raises(Unauthenticated):
            caller_of(oidc, token(kid="nobody"))
    assert issuer.fetches <= 2  # the first fetch, and at most one forced refresh


def test_an_unreachable_jwks_refuses_the_token_without_an_error():
    oidc = OidcTokens(
        OidcSettings(
            jwks_url="http://127.0.0.1:1/jwks", issuer=ISSUER, audience="jobpost", allow_http_jwks=True
        )
    )
    with pytest.raises(Unauthenticated) as caught:
        caller_of(oidc, token())
    assert caught.value.reason == "jwks_unavailable"


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"algorithms": ["HS256"]}, "HS256"),
        ({"algorithms": ["RS256", "none"]}, "none"),
        ({"algorithms": []}, "none"),
        ({"jwks_url": "http://idp.test/jwks"}, "https"),
        ({"jwks_url": "file:///etc/passwd"}, "https"),
    ],
)
def test_settings_that_would_trust_a_shared_secret_or_plain_http_are_refused(settings, says):
    base = {"jwks_url": "https://idp.test/jwks", "issuer": ISSUER, "audience": "jobpost"}
    with pytest.raises(ValidationError, match=says):
        OidcSettings(**(base | settings))


def test_plain_http_is_a_development_setting_said_out_loud():
    allowed = OidcSettings(jwks_url="http://127.0.0.1:9/jwks", allow_http_jwks=True)
    assert allowed.enabled
    assert OidcSettings(jwks_url="https://idp.test/jwks", algorithms=["ES256", "EdDSA", "PS256"]).enabled
