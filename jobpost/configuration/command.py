"""`jobpost config show | check | reference`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from runtime.settings_file import ConfigFileError

# The components of jobpost.configuration.catalog.COMPONENTS.
COMPONENTS = ("api", "sequencer", "consumer", "indexer", "webhooks")
PROBLEMS = 2


def add_config_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "config", help="the settings of every component: show them, check them, write their reference"
    )
    actions = config.add_subparsers(dest="action", required=True)
    show = actions.add_parser(
        "show", help="each setting's effective value (secrets masked) and where it came from"
    )
    show.add_argument("--component", choices=COMPONENTS, help="only the tables this component reads")
    show.set_defaults(func=_show)
    check = actions.add_parser("check", help=f"name every problem of the settings; exit {PROBLEMS} if any")
    check.add_argument("--component", choices=COMPONENTS, help="only the tables this component reads")
    check.set_defaults(func=_check)
    reference = actions.add_parser(
        "reference", help="every setting as Markdown (docs/configuration/reference.md)"
    )
    reference.add_argument("--output", type=Path, help="write it to this file (default: standard output)")
    reference.set_defaults(func=_reference)


def _show(args: argparse.Namespace) -> int:
    return show(args.component, sys.stdout)


def show(component: str | None, out: TextIO) -> int:
    """The effective settings, table by table, in the file's notation (`none`: unset), each
    with its origin; a table that cannot be read says why (exit 2)."""
    from jobpost.configuration.catalog import value_text
    from jobpost.configuration.effective import effective, sections_of
    from runtime.settings_file import config_file

    try:
        path = config_file()
    except ValidationError as exc:
        print(f"error: JOBPOST_CONFIG_FILE: {exc.errors(include_input=False)[0]['msg']}", file=sys.stderr)
        return PROBLEMS
    print(f"# configuration file: {path or 'none (JOBPOST_CONFIG_FILE is not set)'}", file=out)
    failed = False
    for section in sections_of(component):
        print(f"\n[{section.table}]", file=out)
        try:
            rows = effective(section)
        except (ValidationError, ConfigFileError) as exc:
            failed = True
            print(f"# not readable: {_first_line(exc)} (jobpost config check names every problem)", file=out)
            continue
        lines = [(f"{'.'.join(row.setting.path)} = {value_text(row.value)}", row.origin) for row in rows]
        width = min(max(len(line) for line, _ in lines), 60)
        for line, origin in lines:
            print(f"{line:<{width}}  # {origin}", file=out)
    return PROBLEMS if failed else 0


def _check(args: argparse.Namespace) -> int:
    return check(args.component, sys.stdout)


def check(component: str | None, out: TextIO) -> int:
    from jobpost.configuration.effective import problems

    found = problems(component)
    for problem in found:
        print(f"error: {problem}", file=out)
    if found:
        print(f"{len(found)} problem{'s' if len(found) > 1 else ''}", file=out)
        return PROBLEMS
    print(f"ok: the settings of {component or 'every component'} are valid", file=out)
    return 0


def _reference(args: argparse.Namespace) -> int:
    from jobpost.configuration.reference import reference

    text = reference()
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
    return 0


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors(include_input=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}" if where else error["msg"]
    return str(exc)
