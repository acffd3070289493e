"""The layout table (docs/architecture/layout.md, which the README's Layout links to) matches
the tree: every file it names exists in its row's folder, and every module and sub-package
of the code's folders is named in its row (a sub-package's own modules may be described as
a whole)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / "docs" / "architecture" / "layout.md"
CODE = (
    "schemas",
    "runtime",
    "listing",
    "sequencer",
    "producer_api",
    "consumers",
    "search_indexer",
    "webhooks",
    "jobpost",
    "dev/jobpost_dev",
    "tests",
)


def rows() -> dict[str, str]:
    text = LAYOUT.read_text()
    table = text[text.index("| folder | what |") :].split("\n\n", 1)[0]
    found = {}
    for line in table.splitlines()[2:]:
        folder, what = (cell.strip() for cell in line.strip("|").split("|", 1))
        found[folder.strip("`").rstrip("/")] = what
    return found


def where(folder: str) -> Path:
    return (ROOT / folder).resolve()


def named(what: str) -> set[str]:
    """The file and folder names a row mentions in backticks (a folder with its `/`)."""
    return set(re.findall(r"`([\w./-]+)`", what))


def test_every_file_the_table_names_exists_in_its_folder():
    missing = []
    for folder, what in rows().items():
        for name in named(what):
            is_file = re.search(r"\.(py|md|json|lua)$", name)
            if is_file or name.endswith("/"):
                here = Path(name.rstrip("/")).name
                if not [found for found in where(folder).rglob(here) if found.is_dir() != bool(is_file)]:
                    missing.append(f"{folder}/{name}")
    assert not missing, f"the Layout table names what is not there: {missing}"


def test_every_module_and_package_of_the_code_is_in_the_table():
    table = rows()
    unnamed = []
    for folder in CODE:
        rows_here = [what for row, what in table.items() if where(row) == where(folder)]
        mentioned = {Path(n.rstrip("/")).name for what in rows_here for n in named(what)}
        for path in sorted(where(folder).iterdir()):
            module = path.suffix == ".py" and path.stem not in ("__init__", "__main__", "conftest")
            package = path.is_dir() and (any(path.glob("*.py")) or path.name == "ui")
            if (module or package) and path.name not in mentioned:
                unnamed.append(f"{folder}/{path.name}")
    assert not unnamed, f"modules the Layout table does not name: {unnamed}"
