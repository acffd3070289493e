"""Every settings table of the product, which component reads it, and each setting in it
(its key in the file, its variable, its type, its default, its description)."""

from __future__ import annotations

import enum
import json
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from consumers.config import ConsumerSettings
from producer_api.config import ApiSettings
from producer_api.oidc import OidcSettings
from runtime.kafka import KafkaSettings
from runtime.schema_registry import SchemaRegistrySettings
from runtime.search_server import ElasticsearchSettings
from runtime.settings_file import Settings, is_settings, table_of
from runtime.stores import StateSettings
from runtime.webhook_secrets import WebhookSecretsSettings
from search_indexer.config import IndexerSettings
from sequencer.config import SequencerSettings
from webhooks.config import DispatcherSettings

SECRET = "**********"


@dataclass(frozen=True)
class Section:
    """One table of the file and the variables of the same prefix: one settings class."""

    cls: type[Settings]
    env_prefix: str

    @property
    def table(self) -> str:
        return table_of(self.env_prefix)

    @property
    def delimiter(self) -> str | None:
        return self.cls.model_config.get("env_nested_delimiter")

    def build(self, **given: Any) -> Settings:
        return self.cls(_env_prefix=self.env_prefix, **given)  # type: ignore[call-arg]

    def settings(self) -> Iterator[Setting]:
        """Each setting of the table, a model inside it flattened (`[consumer.retry]`); the
        settings objects inside it are tables of their own, not repeated here."""
        yield from _walk(self, self.cls, ())


def _section(cls: type[Settings], env_prefix: str | None = None) -> Section:
    return Section(cls, env_prefix or cls.model_config.get("env_prefix", ""))


SECTIONS: tuple[Section, ...] = (
    _section(KafkaSettings),
    _section(StateSettings),
    _section(SchemaRegistrySettings),
    _section(ApiSettings),
    _section(OidcSettings),
    _section(ElasticsearchSettings, "JOBPOST_API_ELASTICSEARCH_"),
    _section(SequencerSettings),
    _section(ConsumerSettings),
    _section(IndexerSettings),
    _section(ElasticsearchSettings, "JOBPOST_INDEXER_ELASTICSEARCH_"),
    _section(WebhookSecretsSettings),
    _section(DispatcherSettings),
)
BY_TABLE = {section.table: section for section in SECTIONS}

# The tables each command of a deployment reads (every one registers its schemas: the
# registry's table too). The API runs a sequencer member unless told not to.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "api": (
        "kafka",
        "state",
        "schema_registry",
        "api",
        "api.oidc",
        "api.elasticsearch",
        "webhook_secrets",
        "sequencer",
    ),
    "sequencer": ("kafka", "state", "schema_registry", "sequencer"),
    "consumer": ("kafka", "state", "schema_registry", "consumer"),
    "indexer": ("kafka", "schema_registry", "indexer", "indexer.elasticsearch"),
    "webhooks": ("kafka", "schema_registry", "webhook_secrets", "webhooks"),
}


def inner_section(outer: Section, field: str) -> Section:
    """The table a settings object inside `outer` reads: its own part (`api.elasticsearch`)
    or the one table of its class (`kafka`, whatever the field is called)."""
    cls = outer.cls.model_fields[field].annotation
    tables = [section for section in SECTIONS if section.cls is cls]
    own = [section for section in tables if section.table.startswith(f"{outer.table}.")]
    (found,) = own or tables
    return found


@dataclass(frozen=True)
class Setting:
    section: Section
    path: tuple[str, ...]  # ("linkedin", "base_url") in [consumer]
    field: FieldInfo

    @property
    def key(self) -> str:
        return ".".join((self.section.table, *self.path))

    @property
    def variable(self) -> str:
        """The environment variable; a model inside a table without a nested delimiter is
        one variable holding JSON."""
        delimiter = self.section.delimiter
        names = self.path if delimiter else self.path[:1]
        variable = self.section.env_prefix + (delimiter or "").join(names).upper()
        if delimiter and typing.get_origin(self.field.annotation) is dict:
            return f"{variable}{delimiter}<NAME>"  # JOBPOST_KAFKA_CONFIG__<NAME>, one per entry
        return variable

    @property
    def description(self) -> str:
        return " ".join((self.field.description or "").split())

    @property
    def type(self) -> str:
        return type_text(self.field.annotation) + "".join(_bounds(self.field))

    @property
    def default(self) -> Any:
        if self.field.default_factory is not None:
            return self.field.default_factory()  # type: ignore[call-arg]
        return None if self.field.default is PydanticUndefined else self.field.default


def _walk(section: Section, model: type[BaseModel], path: tuple[str, ...]) -> Iterator[Setting]:
    for name, field in model.model_fields.items():
        if is_settings(field):
            continue
        inner = field.annotation
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            yield from _walk(section, inner, (*path, name))
        else:
            yield Setting(section, (*path, name), field)


def type_text(annotation: Any) -> str:
    """`int`, `str or none`, `list[str]`: a type as a reader of the reference says it."""
    if annotation is type(None):
        return "none"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_text(arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return " or ".join(json.dumps(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        return f"{origin.__name__}[{', '.join(type_text(a) for a in typing.get_args(annotation))}]"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(json.dumps(member.value) for member in annotation)
    if annotation is SecretStr:
        return "secret"
    if annotation is Path:
        return "path"
    return re.sub(r"(?:\w+\.)+(\w+)", r"\1", getattr(annotation, "__name__", str(annotation)))


def _bounds(field: FieldInfo) -> Iterator[str]:
    for bound, name, sign in (
        (annotated_types.Gt, "gt", ">"),
        (annotated_types.Ge, "ge", "≥"),
        (annotated_types.Lt, "lt", "<"),
        (annotated_types.Le, "le", "≤"),
    ):
        for item in field.metadata:
            if isinstance(item, bound):
                yield f", {sign} {getattr(item, name)}"


def value_text(value: Any) -> str:
    """A value as it is written in the file (a secret masked, none as `none`)."""
    if value is None:
        return "none"
    if isinstance(value, SecretStr):
        return '""' if not value.get_secret_value() else SECRET
    if isinstance(value, enum.Enum):
        return json.dumps(value.value)
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{value_text(str(k))} = {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    return json.dumps(value)
