"""Who a bearer token stands for: its credential's name, employer and scopes.

Three sources, asked in this order: the development tokens (`JOBPOST_API_TOKENS`: every
scope, the default employer, every employer's postings), the credentials file
(`JOBPOST_API_CREDENTIALS_FILE`, token SHA-256 hashes, re-read when it changes) and,
when configured, OIDC bearer JWTs (`producer_api.oidc`). Tokens and hashes are compared
in constant time, and every entry is compared, so the time an answer takes says nothing
about which entry came close.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from producer_api.callers import EVERY_SCOPE, Caller, Scope, identifier
from schemas.model import DEFAULT_EMPLOYER

log = logging.getLogger(__name__)
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class CredentialsError(ValueError):
    """The credentials file cannot be used (its path and what is wrong say why)."""


@dataclass(frozen=True)
class Credential:
    name: str
    token_sha256: bytes  # the digest, not its hex
    employer: str
    scopes: frozenset[Scope]

    def caller(self) -> Caller:
        return Caller(self.name, self.employer, self.scopes)


def sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def parse(text: str, source: str) -> list[Credential]:
    """The credentials of the file's JSON (`{"credentials": [{name, token_sha256, employer,
    scopes}]}`); anything else is a CredentialsError naming the entry."""
    try:
        document = json.loads(text)
        entries = document["credentials"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CredentialsError(f'{source}: not a JSON object with a "credentials" list') from exc
    if not isinstance(entries, list):
        raise CredentialsError(f'{source}: "credentials" is not a list')
    found: list[Credential] = []
    for number, entry in enumerate(entries, 1):
        found.append(_credential(entry, f"{source}: entry {number}"))
    names = [c.name for c in found]
    if len(set(names)) != len(names):
        raise CredentialsError(f"{source}: two entries share a name (the name is what the audit records)")
    return found


def _credential(entry: object, where: str) -> Credential:
    if not isinstance(entry, dict):
        raise CredentialsError(f"{where}: not an object")
    unknown = set(entry) - {"name", "token_sha256", "employer", "scopes"}
    if unknown:
        raise CredentialsError(f"{where}: unknown fields {sorted(unknown)}")
    name, digest, employer, scopes = (entry.get(k) for k in ("name", "token_sha256", "employer", "scopes"))
    try:
        # The name is what the audit records and the rate limit counts by: an identifier,
        # so it never equals an OIDC caller's (`oidc:<issuer>#<sub>`).
        name = identifier(name, "name")
    except ValueError as exc:
        raise CredentialsError(f"{where}: {exc}") from exc
    if not isinstance(digest, str) or not _HEX_SHA256.match(digest.lower()):
        raise CredentialsError(f"{where} ({name}): token_sha256 must be 64 hex digits")
    try:
        employer = identifier(employer)  # the one rule: never `*`, never anything but a plain name
    except ValueError as exc:
        raise CredentialsError(f"{where} ({name}): {exc}") from exc
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        raise CredentialsError(f"{where} ({name}): scopes must be a list of {sorted(EVERY_SCOPE)}")
    try:
        granted = frozenset(Scope(s) for s in scopes)
    except ValueError as exc:
        raise CredentialsError(f"{where} ({name}): {exc}; scopes are {sorted(EVERY_SCOPE)}") from exc
    return Credential(name, bytes.fromhex(digest), employer, granted)


def development_callers(tokens: list[str]) -> list[tuple[bytes, Caller]]:
    """The development tokens, named by their place in the list: every scope (so `ops`:
    acting for every employer), the default employer."""
    return [
        (sha256(token), Caller(f"dev-token-{n}", DEFAULT_EMPLOYER, EVERY_SCOPE))
        for n, token in enumerate(tokens, 1)
    ]


class CredentialsFile:
    """The credentials of a file, re-read when its modification time, size or inode change
    (looked at no more often than every `check_every_s`): a removed entry is refused from
    the next look on, without a restart. A file that turns unreadable or invalid keeps
    nothing: every token of it is refused until it is valid again (logged), rather than
    serving entries that may have been revoked."""

    def __init__(self, path: Path, check_every_s: float = 1.0) -> None:
        self.path = path
        self.check_every_s = check_every_s
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._checked = 0.0
        self._credentials: list[Credential] = []
        self.load()  # at start, a bad file is an error the operator sees at once

    def load(self) -> None:
        """Read the file now; a CredentialsError when it cannot be used."""
        try:
            stat = self.path.stat()
            text = self.path.read_text()
        except OSError as exc:
            raise CredentialsError(f"{self.path}: {exc.strerror or exc}") from exc
        credentials = parse(text, str(self.path))
        with self._lock:
            self._credentials = credentials
            self._seen = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        log.info("credentials read from %s: %d entries", self.path, len(credentials))

    def credentials(self) -> list[Credential]:
        now = time.monotonic()
        if now - self._checked >= self.check_every_s:
            self._checked = now
            self._reload_if_changed()
        return self._credentials

    def _reload_if_changed(self) -> None:
        try:
            stat = os.stat(self.path)
        except OSError:
            stat = None
        seen = None if stat is None else (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if seen is not None and seen == self._seen:
            return
        try:
            self.load()
        except CredentialsError as exc:
            log.error("credentials file refused, no token of it is accepted until it is valid: %s", exc)
            with self._lock:
                self._credentials = []
                self._seen = seen


class Credentials:
    """Every token this API accepts, without OIDC: the development tokens and the file's."""

    def __init__(self, development: list[str], file: CredentialsFile | None) -> None:
        self._development = development_callers(development)
        self.file = file

    def caller(self, token: str) -> Caller | None:
        offered = sha256(token)
        found: Caller | None = None
        for digest, caller in self._development:
            if hmac.compare_digest(offered, digest):
                found = caller
        for credential in self.file.credentials() if self.file else []:
            if hmac.compare_digest(offered, credential.token_sha256) and found is None:
                found = credential.caller()
        return found
