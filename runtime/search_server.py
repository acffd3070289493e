"""How a deployable reaches Elasticsearch: one typed settings object and its client.

Each deployable reads it under its own prefix, so each has its own credentials (the API
needs to read, the indexer to write): `JOBPOST_API_ELASTICSEARCH_URL`, `_API_KEY`,
`_USERNAME`, `_PASSWORD`, `_CA_BUNDLE`, and likewise `JOBPOST_INDEXER_ELASTICSEARCH_*`. A
bare URL works as before. Credentials written inside the URL (`https://user:pass@host`)
are moved to `username` and `password` (a SecretStr), so the URL that is shown and logged
holds none; given both there and as settings, they are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from elasticsearch import Elasticsearch
from pydantic import SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from runtime.settings_file import Settings


class ElasticsearchSettings(Settings):
    """Built by each deployable with its own prefix (see the module docstring)."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_ELASTICSEARCH_", hide_input_in_errors=True)

    url: str = "http://127.0.0.1:9200"
    """http(s)://host[:port]; credentials written in it move to username and password"""
    api_key: SecretStr | None = None  # the encoded key Elasticsearch's create-API-key answer calls `encoded`
    """an API key, in its encoded form (or a username and password, not both)"""
    username: str | None = None
    """a user of the search server (with password)"""
    password: SecretStr | None = None
    """that user's password (a secret)"""
    ca_bundle: Path | None = None  # PEM file of the CA(s) that signed the server's certificate
    """a PEM file of the CAs an https URL's certificate is checked against"""

    @model_validator(mode="after")
    def _credentials_in_their_place(self) -> ElasticsearchSettings:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the Elasticsearch URL must be http(s)://host[:port]")
        if parts.username is not None or parts.password is not None:
            if self.username is not None or self.password is not None or self.api_key is not None:
                raise ValueError("Elasticsearch credentials are given both in the URL and as settings")
            self.username = unquote(parts.username or "")
            self.password = SecretStr(unquote(parts.password or ""))
            self.url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        if self.api_key is not None and (self.username is not None or self.password is not None):
            raise ValueError("Elasticsearch takes an API key or a username and password, not both")
        if (self.username is None) != (self.password is None):
            raise ValueError("an Elasticsearch username goes with a password")
        if self.ca_bundle is not None:
            if parts.scheme != "https":
                raise ValueError("a CA bundle is for an https Elasticsearch URL")
            if not self.ca_bundle.is_file():
                raise ValueError(f"no CA bundle at {self.ca_bundle}")
        return self

    def client(self, **options: Any) -> Elasticsearch:
        """A client with these credentials and CA; `options` are the client's own (timeouts,
        retries)."""
        secured: dict[str, Any] = {}
        if self.api_key is not None:
            secured["api_key"] = self.api_key.get_secret_value()
        if self.username is not None and self.password is not None:
            secured["basic_auth"] = (self.username, self.password.get_secret_value())
        if self.ca_bundle is not None:
            secured["ca_certs"] = str(self.ca_bundle)
        return Elasticsearch(self.url, **secured, **options)


def settings_of(deployable: str) -> ElasticsearchSettings:
    """The settings a deployable reads: `JOBPOST_<DEPLOYABLE>_ELASTICSEARCH_*`."""
    return ElasticsearchSettings(_env_prefix=f"JOBPOST_{deployable.upper()}_ELASTICSEARCH_")  # type: ignore[call-arg]
