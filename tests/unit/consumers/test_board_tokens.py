"""The OAuth token source against a local token endpoint with a fake clock, and the check
that keeps sandbox credentials away from a real board."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qsl

import aiohttp
import pytest
from aiohttp import web
from pydantic import SecretStr

from consumers.board_tokens import ClientCredentials, StaticToken, refresh_after, token_source, with_token
from consumers.boards import settings as board_settings
from consumers.boards.base import BoardDown, TokenRefused
from consumers.boards.indeed import IndeedSettings
from consumers.boards.linkedin import LinkedInSettings
from consumers.boards.settings import UnsafeBoardSettings
from jobpost_dev.sandbox import tokens as sandbox_tokens
from tests.unit.consumers.board_server import answering, board, run


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def granting(expires_in=1800, hold: asyncio.Event | None = None):
    """A token endpoint giving token-1, token-2, … (after `hold` is set, if given)."""
    issued = []

    async def handler(_request: web.Request) -> web.Response:
        if hold is not None:
            await hold.wait()
        issued.append(f"token-{len(issued) + 1}")
        return web.json_response(
            {"access_token": issued[-1], "expires_in": expires_in, "token_type": "Bearer"}
        )

    return handler


def source(b, clock: Clock) -> ClientCredentials:
    return ClientCredentials(
        b.client, "linkedin", f"{b.url}/token", "the-id", SecretStr("a/secret+="), clock=clock
    )


def test_the_token_is_asked_for_with_client_credentials_in_a_form_body():
    async def scenario():
        async with board(granting()) as b:
            assert await source(b, Clock()).token() == "token-1"
            return b.seen

    (seen,) = run(scenario())
    assert seen.method == "POST" and seen.path == "/token"
    assert seen.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert dict(parse_qsl(seen.body.decode())) == {
        "grant_type": "client_credentials",
        "client_id": "the-id",
        "client_secret": "a/secret+=",
    }


@pytest.mark.parametrize("expires_in", [1800, "1800"])  # LinkedIn's page shows a string
def test_one_token_is_shared_until_80_percent_of_its_life_then_fetched_again(expires_in):
    async def scenario():
        clock = Clock()
        async with board(granting(expires_in)) as b:
            tokens = source(b, clock)
            first = [await tokens.token() for _ in range(3)]
            clock.now += 1439
            still = await tokens.token()
            clock.now += 2  # past 1,440 s of 1,800
            return first, still, await tokens.token(), tokens.fetches

    first, still, later, fetches = run(scenario())
    assert first == ["token-1"] * 3 and still == "token-1"
    assert later == "token-2" and fetches == 2


def test_the_refresh_comes_at_80_percent_or_a_minute_before_the_end_and_never_before_half():
    assert refresh_after(1800) == 1440
    assert refresh_after(3600) == 2880
    assert refresh_after(200) == 140  # a minute before the end is earlier than 160
    assert refresh_after(2) == 1  # a 2 s test token: at half its life, not on every call


def test_fifty_concurrent_callers_wait_for_one_fetch():
    async def scenario():
        hold = asyncio.Event()
        async with board(granting(hold=hold)) as b:
            tokens = source(b, Clock())
            waiting = [asyncio.ensure_future(tokens.token()) for _ in range(50)]
            await asyncio.sleep(0.05)
            hold.set()
            return await asyncio.gather(*waiting), len(b.seen)

    got, fetched = run(scenario())
    assert got == ["token-1"] * 50 and fetched == 1


def test_a_refused_token_is_fetched_again_once_and_an_older_refusal_changes_nothing():
    async def scenario():
        async with board(granting()) as b:
            tokens = source(b, Clock())
            old = await tokens.token()
            tokens.expire(old)
            new = await tokens.token()
            tokens.expire(old)  # a call that began with the old token reports late
            return old, new, await tokens.token(), tokens.fetches

    assert run(scenario()) == ("token-1", "token-2", "token-2", 2)


@pytest.mark.parametrize(
    "answer",
    [
        answering(
            {"error": "invalid_client", "error_description": "Client authentication failed"}, status=401
        ),
        answering({"message": "down"}, status=503),
        answering(b"<html>oops</html>"),
        answering({"expires_in": 60}),
        answering({"access_token": "t", "expires_in": "soon"}),
        answering({"access_token": "t", "token_type": "mac"}),
    ],
)
def test_a_token_endpoint_that_fails_is_the_board_down_for_every_waiting_caller(answer):
    async def scenario():
        async with board(answer) as b:
            tokens = source(b, Clock())
            return await asyncio.gather(*(tokens.token() for _ in range(5)), return_exceptions=True), len(
                b.seen
            )

    failures, fetched = run(scenario())
    assert all(isinstance(f, BoardDown) for f in failures) and fetched == 1


SECRET_LOOKING = "eyJhbGciOiJSUzI1NiJ9.secret-part"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (answering({"error": "invalid_client", "error_description": SECRET_LOOKING}, status=401), "401"),
        (answering({"accessToken": SECRET_LOOKING, "expires_in": 60}), "has no access_token"),
        (answering({"access_token": SECRET_LOOKING, "token_type": "mac"}), "not a bearer token"),
        (answering(f"<html>{SECRET_LOOKING}</html>".encode()), "not UTF-8 JSON"),
        (answering({"access_token": SECRET_LOOKING, "expires_in": f"{SECRET_LOOKING}"}), "not a number"),
    ],
)
def test_a_token_endpoint_s_answer_is_described_never_quoted(answer, said):
    async def scenario():
        async with board(answer) as b:
            await source(b, Clock()).token()

    with pytest.raises(BoardDown) as refused:
        run(scenario())
    assert said in str(refused.value) and "secret-part" not in str(refused.value)


def test_oauth_s_error_code_is_named():
    async def scenario():
        async with board(answering({"error": "invalid_client"}, status=401)) as b:
            await source(b, Clock()).token()

    with pytest.raises(BoardDown, match=r"linkedin token endpoint answered 401 .* invalid_client"):
        run(scenario())


def test_a_token_endpoint_that_is_not_there_is_the_board_down():
    async def scenario():
        async with board(granting()) as b:
            url = b.url  # nothing listens there once the block is over
        async with aiohttp.ClientSession() as client:
            tokens = ClientCredentials(client, "indeed", f"{url}/token", "id", SecretStr("s"))
            await tokens.token()

    with pytest.raises(BoardDown, match="indeed token endpoint"):
        run(scenario())


def test_a_static_token_is_never_fetched():
    static = StaticToken(SecretStr("given"))
    static.expire("given")
    assert run(static.token()) == "given"


def test_the_settings_choose_the_token_source():
    async def scenario():
        async with board(granting()) as b:
            oauth = token_source(b.client, "linkedin", LinkedInSettings(base_url=f"{b.url}/linkedin"))
            static = token_source(b.client, "indeed", IndeedSettings(access_token=SecretStr("given")))
            return oauth, static

    oauth, static = run(scenario())
    assert isinstance(oauth, ClientCredentials) and oauth.url.endswith("/linkedin/oauth/v2/accessToken")
    assert isinstance(static, StaticToken)


def test_the_sandbox_accepts_the_credentials_the_consumers_default_to():
    assert board_settings.SANDBOX_CLIENT_ID == sandbox_tokens.SANDBOX_CLIENT_ID
    assert board_settings.SANDBOX_CLIENT_SECRET == sandbox_tokens.SANDBOX_CLIENT_SECRET


@pytest.mark.parametrize(
    ("sandbox", "real"),
    [
        (LinkedInSettings(), LinkedInSettings(base_url="https://api.linkedin.com")),
        (
            IndeedSettings(base_url="http://localhost:8090/indeed"),
            IndeedSettings(base_url="https://apis.indeed.com"),
        ),
        (
            IndeedSettings(base_url="http://sandbox:8090/indeed", sandbox_hosts=["sandbox"]),
            IndeedSettings(base_url="http://sandbox:8090/indeed"),  # a host not named a sandbox
        ),
    ],
)
def test_a_sandbox_needs_no_credentials_of_its_own(sandbox, real):
    """The same default credentials start a consumer for a sandbox and are refused for a
    board that is not one: the host decides, not the credentials."""
    assert (sandbox.client_id, real.client_id) == (board_settings.SANDBOX_CLIENT_ID,) * 2
    assert sandbox.is_sandbox() and not real.is_sandbox()
    sandbox.check_credentials()
    with pytest.raises(UnsafeBoardSettings, match="are missing or the sandbox's"):
        real.check_credentials()


def test_a_real_board_with_the_sandbox_credentials_refuses_to_start_saying_why():
    with pytest.raises(UnsafeBoardSettings) as caught:
        LinkedInSettings(base_url="https://api.linkedin.com").check_credentials()
    message = str(caught.value)
    assert "https://api.linkedin.com is a real board" in message
    assert "JOBPOST_CONSUMER_LINKEDIN__CLIENT_ID" in message
    assert "JOBPOST_CONSUMER_LINKEDIN__TOKEN_URL is not set" in message
    assert "JOBPOST_CONSUMER_LINKEDIN__EMPLOYERS_FILE" in message
    with pytest.raises(UnsafeBoardSettings, match="ACCESS_TOKEN is the sandbox's"):
        IndeedSettings(
            base_url="https://apis.indeed.com", access_token=SecretStr("sandbox")
        ).check_credentials()
    with pytest.raises(UnsafeBoardSettings, match="CLIENT_SECRET are missing"):
        IndeedSettings(base_url="https://apis.indeed.com", client_secret=None).check_credentials()


def test_a_real_board_with_its_own_credentials_starts(tmp_path):
    """Each of a real board's settings is needed: with all of them the check passes, and
    without any one of them it names that one."""
    registry = tmp_path / "employers.json"
    linkedin = {
        "base_url": "https://api.linkedin.com",
        "token_url": "https://www.linkedin.com/oauth/v2/accessToken",
        "client_id": "ours",
        "client_secret": SecretStr("secret"),
        "employers_file": registry,
    }
    indeed = {
        "base_url": "https://apis.indeed.com",
        "access_token": SecretStr("from-the-proxy"),
        "employers_file": registry,
    }
    LinkedInSettings(**linkedin).check_credentials()
    IndeedSettings(**indeed).check_credentials()
    for missing, named in (
        ("token_url", "TOKEN_URL"),
        ("employers_file", "EMPLOYERS_FILE"),
        ("client_id", "CLIENT_ID"),
    ):
        with pytest.raises(UnsafeBoardSettings, match=named):
            LinkedInSettings(**{**linkedin, missing: None}).check_credentials()
    with pytest.raises(UnsafeBoardSettings, match="EMPLOYERS_FILE"):
        IndeedSettings(**{**indeed, "employers_file": None}).check_credentials()


class Tokens:
    def __init__(self) -> None:
        self.current, self.expired = 1, []

    async def token(self) -> str:
        return f"t{self.current}"

    def expire(self, token: str) -> None:
        self.expired.append(token)
        self.current += 1


def test_a_call_whose_token_is_refused_goes_once_more_with_a_fresh_one_and_a_second_refusal_is_the_board():
    tokens, seen = Tokens(), []

    async def refused_once(token: str) -> str:
        seen.append(token)
        if len(seen) == 1:
            raise TokenRefused("401")
        return "answered"

    assert run(with_token(tokens, "linkedin", refused_once)) == "answered"
    assert (seen, tokens.expired) == (["t1", "t2"], ["t1"])

    async def always_refused(token: str) -> str:
        raise TokenRefused(f"401 for {token}")

    with pytest.raises(BoardDown, match="linkedin refused a fresh access token: 401 for t3"):
        run(with_token(tokens, "linkedin", always_refused))
