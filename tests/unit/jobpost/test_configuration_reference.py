"""The configuration reference in the docs is the one the settings classes write: every
setting described, every table named after its variables, the page not stale."""

from __future__ import annotations

import ast
from pathlib import Path

from jobpost.configuration import catalog, command
from jobpost.configuration.reference import reference
from runtime.settings_file import table_of

PRODUCT = (
    "jobpost",
    "schemas",
    "runtime",
    "listing",
    "sequencer",
    "producer_api",
    "consumers",
    "search_indexer",
)
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


def test_every_settings_class_of_the_product_reads_the_file_and_is_in_the_reference() -> None:
    """A settings class added to the product inherits `runtime.settings_file.Settings` (the
    file under the environment) and has its table in the catalog, so `config show`, `check`
    and the reference know it."""
    root = REFERENCE.parents[2]
    catalogued = {section.cls.__name__ for section in catalog.SECTIONS}
    direct, missing = [], []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = {base.id for base in node.bases if isinstance(base, ast.Name)}
                where = f"{path.relative_to(root)}:{node.name}"
                if "BaseSettings" in bases and where not in (
                    "runtime/settings_file.py:ConfigFileSettings",
                    "runtime/settings_file.py:Settings",
                ):
                    direct.append(where)
                if "Settings" in bases and node.name not in catalogued:
                    missing.append(where)

    assert not direct, f"settings classes that do not read the configuration file: {direct}"
    assert not missing, f"settings classes not in jobpost.configuration.catalog.SECTIONS: {missing}"
