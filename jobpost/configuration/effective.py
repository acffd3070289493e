"""What a deployment's settings are: each setting's effective value and where it came from
(`jobpost config show`), and every problem with them (`jobpost config check`)."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from pydantic import BaseModel, ValidationError
from pydantic_settings import EnvSettingsSource

from consumers.boards.settings import UnsafeBoardSettings
from consumers.config import ConsumerSettings
from jobpost.configuration.catalog import BY_TABLE, COMPONENTS, SECTIONS, Section, Setting, inner_section
from producer_api.config import ApiSettings
from runtime.settings_file import (
    ConfigFileError,
    ConfigFileSource,
    Settings,
    config_file,
    is_settings,
    read_config_file,
)
from schemas.topics import BOARDS

DEFAULT = "default"
ENVIRONMENT = "environment"
FILE = "file"
DERIVED = "derived"  # set by a check from other settings (a URL's credentials, a properties file)


@dataclass(frozen=True)
class Effective:
    setting: Setting
    value: Any
    source: str  # DEFAULT, ENVIRONMENT, FILE or DERIVED
    where: str = ""  # the variable or the file's table and key

    @property
    def origin(self) -> str:
        return f"{self.source} {self.where}".strip()


def sections_of(component: str | None) -> list[Section]:
    if component is None:
        return list(SECTIONS)
    return [BY_TABLE[table] for table in COMPONENTS[component]]


def build(section: Section, lenient: bool = False) -> Settings:
    """The section's settings alone: the settings objects inside it are left at their
    defaults, unread (each is a section of its own, so one bad table is named once).
    Lenient: keys no setting reads are passed over (`unknown_keys` names them), so the
    checks of the settings that are there still run."""
    inner = {
        name: field.annotation.model_construct()  # type: ignore[union-attr]
        for name, field in section.cls.model_fields.items()
        if is_settings(field)
    }
    if lenient:
        return _lenient(section.cls)(_env_prefix=section.env_prefix, **inner)  # type: ignore[call-arg]
    return section.build(**inner)


@functools.cache
def _lenient(cls: type[Settings]) -> type[Settings]:
    return type(cls.__name__, (cls,), {"model_config": {**cls.model_config, "extra": "ignore"}})


def effective(section: Section) -> list[Effective]:
    """Each setting of the section with its value and its source; raises what building the
    section raises (ValidationError, ConfigFileError)."""
    settings = build(section)
    env = EnvSettingsSource(section.cls, env_prefix=section.env_prefix)()
    file_source = ConfigFileSource(section.cls, section.env_prefix)
    file = file_source()
    rows = []
    for setting in section.settings():
        value: Any = settings
        for name in setting.path:
            value = getattr(value, name)
        in_env, in_file = _has(env, setting.path), _has(file, setting.path)
        if in_env and in_file:
            over = f"{setting.variable} (over the file's [{section.table}])"
            rows.append(Effective(setting, value, ENVIRONMENT, over))
        elif in_env:
            rows.append(Effective(setting, value, ENVIRONMENT, setting.variable))
        elif in_file:
            rows.append(Effective(setting, value, FILE, f"{file_source.path} [{section.table}]"))
        elif _differs(value, setting.default):
            rows.append(Effective(setting, value, DERIVED))
        else:
            rows.append(Effective(setting, value, DEFAULT))
    return rows


def _has(data: dict[str, Any], path: tuple[str, ...]) -> bool:
    for name in path:
        if not isinstance(data, dict) or name not in data:
            return False
        data = data[name]
    return True


def _differs(value: Any, default: Any) -> bool:
    plain = getattr(value, "get_secret_value", lambda: value)()
    return plain != getattr(default, "get_secret_value", lambda: default)()


def problems(component: str | None = None) -> list[str]:
    """Every problem of the settings the component reads (every component's: None), each
    named with its key and variable; empty when all is well."""
    try:
        path = config_file()
        data = read_config_file(path) if path else {}
    except (ConfigFileError, ValidationError) as exc:
        return [str(exc)]
    found = list(unknown_keys(data))
    sections = sections_of(component)
    built = {}
    for section in sections:
        try:
            built[section.table] = build(section, lenient=True)
        except ValidationError as exc:
            found.extend(_validation_problems(section, exc))
        except ConfigFileError as exc:
            found.append(str(exc))
    found.extend(_start_refusals(built))
    return found


def _validation_problems(section: Section, exc: ValidationError) -> Iterator[str]:
    for error in exc.errors(include_input=False):  # a value is never quoted: it may be a secret
        path = tuple(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")  # a check of the settings' own: its words
        if not path:
            yield f"[{section.table}]: {message}"
            continue
        setting = next((s for s in section.settings() if path[: len(s.path)] == s.path), None)
        where = f"{setting.key} ({setting.variable})" if setting else ".".join((section.table, *path))
        yield f"{where}: {message}"


def _start_refusals(built: dict[str, Settings]) -> Iterator[str]:
    """What a component refuses at start from its settings alone (no server asked)."""
    api = built.get("api")
    if isinstance(api, ApiSettings) and "api.oidc" in built:
        with_oidc = api.model_copy(update={"oidc": built["api.oidc"]})
        if not with_oidc.any_credentials():
            yield (
                "api: no credentials: set api.tokens (JOBPOST_API_TOKENS), api.credentials_file"
                " or api.oidc.jwks_url; the API refuses to start without one"
            )
    consumer = built.get("consumer")
    if isinstance(consumer, ConsumerSettings):
        for board in BOARDS:
            try:
                getattr(consumer, board.value).check_credentials()
            except UnsafeBoardSettings as exc:
                yield f"consumer.{board.value}: {exc}"


def unknown_keys(data: dict[str, Any]) -> Iterator[str]:
    """The file's keys and tables no setting reads (a misspelt key would else be ignored)."""
    for name, value in data.items():
        if name in BY_TABLE:
            yield from _unknown_in(BY_TABLE[name], value)
        else:
            yield f"[{name}] in the configuration file is no table of jobpost's{_near(name, BY_TABLE)}"


def _unknown_in(section: Section, data: Any) -> Iterator[str]:
    if not isinstance(data, dict):
        yield f"{section.table} in the configuration file is not a table"
        return
    for key, value in data.items():
        field = section.cls.model_fields.get(key)
        if field is not None and is_settings(field):
            inner = inner_section(section, key)
            if inner.table == f"{section.table}.{key}":
                yield from _unknown_in(inner, value)
            else:
                yield f"[{section.table}.{key}] in the configuration file: it is read from [{inner.table}]"
        else:
            yield from _unknown_fields(section.cls, {key: value}, section.table)


def _unknown_fields(model: type[BaseModel], data: dict[str, Any], where: str) -> Iterator[str]:
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            yield f"{where}.{key} in the configuration file is no setting{_near(key, model.model_fields)}"
        elif _is_model(field.annotation) and isinstance(value, dict):
            yield from _unknown_fields(field.annotation, value, f"{where}.{key}")


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _near(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]}?)" if close else ""
