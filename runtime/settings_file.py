"""One configuration file for every component: the base of every settings class.

The file is TOML, named by `JOBPOST_CONFIG_FILE` (no file when it is unset: nothing is
looked for in the working directory, so what a process reads never depends on where it
was started). Each settings class reads one table of it, named by its environment prefix:
`JOBPOST_KAFKA_*` is `[kafka]`, `JOBPOST_API_*` is `[api]`, a deployable's own part of a
shared kind (`JOBPOST_API_OIDC_*`, `JOBPOST_INDEXER_ELASTICSEARCH_*`) is a table inside the
deployable's (`[api.oidc]`, `[indexer.elasticsearch]`), and a nested setting written with
`__` (`JOBPOST_CONSUMER_LINKEDIN__BASE_URL`) is a table inside too (`[consumer.linkedin]`).

What wins: a value given in code, then the environment, then the file, then the default.
A settings object inside another (`ApiSettings.kafka`) reads its own table and variables,
never the outer one's, so a variable overrides the file at every depth.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

PREFIX = "JOBPOST_"
# The deployables whose tables hold the tables of their own parts ([api.oidc]).
DEPLOYABLES = ("api", "sequencer", "consumer", "indexer")


class ConfigFileError(ValueError):
    """The configuration file named cannot be read, or is not TOML."""


class ConfigFileSettings(BaseSettings):
    """Where the configuration file is (this one setting is read from the environment only)."""

    model_config = SettingsConfigDict(env_prefix=PREFIX)

    config_file: Path | None = Field(
        default=None, description="the TOML configuration file every component reads (none: no file)"
    )


def table_of(env_prefix: str) -> str:
    """The file's table for an environment prefix: `JOBPOST_API_OIDC_` is `api.oidc`,
    `JOBPOST_SCHEMA_REGISTRY_` is `schema_registry`."""
    name = env_prefix.upper().removeprefix(PREFIX).strip("_").lower()
    head, _, rest = name.partition("_")
    return f"{head}.{rest}" if head in DEPLOYABLES and rest else name


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigFileError(f"configuration file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"configuration file {path} is not TOML: {exc}") from exc


def config_file() -> Path | None:
    return ConfigFileSettings().config_file


def table(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The table `name` (dotted) of the file's content; empty when it is not there."""
    for key in name.split("."):
        data = data.get(key, {})
        if not isinstance(data, dict):
            raise ConfigFileError(f"[{name}] in the configuration file is not a table")
    return data


def nested_settings(settings_cls: type[BaseSettings]) -> set[str]:
    """The fields that are settings objects of their own (they read their own table)."""
    return {name for name, field in settings_cls.model_fields.items() if is_settings(field)}


def is_settings(field: FieldInfo) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings)


class ConfigFileSource(InitSettingsSource):
    """A settings class's table of the configuration file, without the tables of the
    settings objects inside it."""

    def __init__(self, settings_cls: type[BaseSettings], env_prefix: str) -> None:
        self.path = config_file()
        self.table = table_of(env_prefix)
        data = table(read_config_file(self.path), self.table) if self.path else {}
        inner = nested_settings(settings_cls)
        super().__init__(settings_cls, {key: value for key, value in data.items() if key not in inner})


class Settings(BaseSettings):
    """The base of every settings class of the product: the environment over the file. A
    field's description is its `description=` or the docstring under it (the generated
    reference prints it; a test fails on a field with neither)."""

    model_config = SettingsConfigDict(use_attribute_docstrings=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        prefix = env_settings.env_prefix if isinstance(env_settings, EnvSettingsSource) else ""
        file = ConfigFileSource(settings_cls, prefix)
        return init_settings, env_settings, dotenv_settings, file, file_secret_settings
