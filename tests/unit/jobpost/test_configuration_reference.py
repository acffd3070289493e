"""The configuration reference in the docs is the one the settings classes write: every
setting described, every table named after its variables, the page not stale."""

from __future__ import annotations

from pathlib import Path

from jobpost.configuration import catalog, command
from jobpost.configuration.reference import reference
from runtime.settings_file import table_of

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "configuration" / "reference.md"


def test_every_setting_has_a_description() -> None:
    undescribed = [
        setting.variable
        for section in catalog.SECTIONS
        for setting in section.settings()
        if not setting.description
    ]

    assert not undescribed, f"settings without a description (description= or a docstring): {undescribed}"


def test_the_reference_in_the_docs_is_not_stale() -> None:
    assert REFERENCE.read_text() == reference(), (
        "docs/configuration/reference.md is stale: run `make reference`"
    )


def test_every_setting_is_in_the_reference_by_its_key_and_its_variable() -> None:
    text = REFERENCE.read_text()
    missing = [
        setting.variable
        for section in catalog.SECTIONS
        for setting in section.settings()
        if f"| `{'.'.join(setting.path)}` | `{setting.variable}` |" not in text
    ]

    assert not missing
    assert sum(1 for _ in catalog.SECTIONS for _ in _.settings()) >= 130


def test_each_table_is_named_after_its_variables_and_read_by_a_component() -> None:
    for section in catalog.SECTIONS:
        assert section.table == table_of(section.env_prefix)
        assert any(section.table in tables for tables in catalog.COMPONENTS.values()), section.table


def test_the_command_offers_the_components_the_catalog_knows() -> None:
    assert set(command.COMPONENTS) == set(catalog.COMPONENTS)
