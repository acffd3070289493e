"""`jobpost`: one command line for every component of a deployment.

What an operator runs: `api`, `sequencer`, `consumer`, `indexer`, `reindex`, `webhooks`,
`topics`, `acls`, `dlq`. Installed packages may add commands through the entry-point group `jobpost.commands`:
each entry point is a function given the sub-command parsers, adding its own (jobpost-dev,
the development tools, adds `run`, `stack`, `doctor`, `chaos` and `sandbox`).

`config` shows and checks the settings all of them read (`jobpost.configuration`).
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.metadata
import logging
import sys
from pathlib import Path

from pydantic import ValidationError

from jobpost.configuration.command import add_config_command
from runtime.connection import StartRefused
from runtime.kafka import KafkaSettings
from runtime.schema_registry import SchemaRegistryError
from runtime.settings_file import ConfigFileError
from runtime.topics import ensure_topics
from schemas.topics import BOARDS, Topics

COMMANDS = "jobpost.commands"  # the entry-point group of the commands other packages add


def _version() -> str:
    try:
        return importlib.metadata.version("jobpost")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _topics(args: argparse.Namespace) -> int:
    created = ensure_topics(KafkaSettings())
    print("created: " + (", ".join(created) if created else "nothing (all topics exist and match)"))
    return 0


def _acls(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from jobpost import acls
    from runtime.acls import RegistryStorage, Role, principals, table

    kafka = KafkaSettings()
    try:
        users = {Role(role): user for role, _, user in (u.partition("=") for u in args.user)}
        passwords = acls.read_passwords(args.passwords) if args.passwords else None
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    found = principals(
        Topics(kafka.topic_prefix), users, RegistryStorage(args.registry_topic, args.registry_group)
    )
    print(table(found))
    if not args.apply:
        return 0
    try:
        applied = acls.apply(kafka, found, passwords)
    except (KafkaException, ValueError) as exc:
        print(f"error: applying the ACLs at {kafka.bootstrap_servers} failed: {exc}", file=sys.stderr)
        return 1
    print(f"\nACL bindings: {applied.created} created, {applied.present} already there")
    if applied.users:
        print(f"SCRAM-SHA-512 users set: {', '.join(applied.users)}")
    for binding in applied.unknown:
        print(f"not in the table (left as it is): {binding}")
    return 0


def _added_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands installed packages add (entry-point group `jobpost.commands`), by name."""
    for entry_point in sorted(importlib.metadata.entry_points(group=COMMANDS), key=lambda e: e.name):
        try:
            add = entry_point.load()
        except (ImportError, AttributeError) as exc:  # a package half removed: its commands go
            print(
                f"jobpost: command {entry_point.name} ({entry_point.value}) not loaded: {exc}",
                file=sys.stderr,
            )
            continue
        add(commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobpost", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("topics", help="create every topic idempotently and check existing ones")
    p.set_defaults(func=_topics)

    for name, help_text in (
        ("api", "the HTTP API (with a sequencer member unless JOBPOST_API_EMBEDDED_SEQUENCER=false)"),
        ("sequencer", "a sequencer member alone"),
        ("indexer", "the search indexer (consumer group jobpost-search-indexer)"),
        ("reindex", "build a fresh search index from jobpost.postings and switch the alias to it"),
        ("webhooks", "the webhooks dispatcher: posting and listing events POSTed to employers' endpoints"),
    ):
        commands.add_parser(name, help=help_text).set_defaults(func=_component(name))
    p = commands.add_parser("consumer", help="a delivery consumer for one job board")
    p.add_argument("destination", choices=[board.value for board in BOARDS])
    p.set_defaults(func=_consumer)

    p = commands.add_parser(
        "acls", help="print each component's Kafka principal and ACLs; --apply creates them on the cluster"
    )
    p.add_argument("--apply", action="store_true", help="create the ACL bindings missing on the cluster")
    p.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="ROLE=NAME",
        help="a role's SASL user name (default <topic prefix>-<role>), repeatable",
    )
    p.add_argument(
        "--passwords",
        type=Path,
        help='with --apply: a JSON file {"<role>": "<password>"}: each user gets a SCRAM-SHA-512 credential',
    )
    p.add_argument("--registry-topic", default="_schemas", help="the schema registry's storage topic")
    p.add_argument("--registry-group", default="schema-registry", help="the schema registry's group")
    p.set_defaults(func=_acls)

    p = commands.add_parser(
        "dlq", help="list a board's dead letters, or ask its consumer to attempt them again (redrive)"
    )
    p.add_argument("action", choices=["list", "redrive"])
    p.add_argument("destination", choices=[board.value for board in BOARDS])
    p.add_argument("--wait", type=float, default=60.0, help="redrive: seconds to wait for the outcomes")
    p.set_defaults(func=_dlq)

    add_config_command(commands)
    _added_commands(commands)
    return parser


def _consumer(args: argparse.Namespace) -> int:
    _logging(args.destination)
    _records()
    from consumers.main import run_consumer

    run_consumer(args.destination)
    return 0


def _dlq(args: argparse.Namespace) -> int:
    _records()
    from jobpost.dlq import list_dead_letters, redrive
    from schemas.enums import Destination

    board = Destination(args.destination)
    if args.action == "list":
        list_dead_letters(board)
        return 0
    return redrive(board, args.wait)


def _logging(component: str) -> None:
    """Services log JSON lines; the commands a person runs log plain text. A crash of a
    service in native code (librdkafka, RocksDB) prints every thread's Python stack to
    stderr, its log, instead of leaving only an exit signal behind."""
    faulthandler.enable()
    if component == "reindex":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    else:
        from runtime.logs import configure

        configure(component)


def _records() -> None:
    """Choose this process's wire format for records, once, before it reads or writes one:
    with JOBPOST_SCHEMA_REGISTRY_URL set, register this release's schemas (a refusal stops
    the process here, never mid-stream) and write the registry's format."""
    from runtime.schema_registry import SchemaRegistrySettings, use_schema_registry

    settings = SchemaRegistrySettings()
    if not settings.url:
        return
    registry = use_schema_registry(settings, Topics(KafkaSettings().topic_prefix))
    if registry is not None:
        writes = "the registry's wire format" if registry.write else "single-object encoding"
        log = logging.getLogger("jobpost.cli")
        log.info("schema registry %s: %d schemas, writing %s", settings.url, len(registry.ids), writes)


def _component(name: str):  # type: ignore[no-untyped-def]
    def run(_args: argparse.Namespace) -> int:
        _logging(name)
        _records()
        if name == "api":
            from producer_api.main import run_api

            run_api()
        elif name == "sequencer":
            from sequencer.main import run_sequencer

            run_sequencer()
        elif name == "indexer":
            from search_indexer.main import run_indexer

            run_indexer()
        elif name == "reindex":
            from search_indexer.main import run_reindex

            run_reindex()
        elif name == "webhooks":
            from webhooks.main import run_dispatcher

            run_dispatcher()
        return 0

    return run


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except SchemaRegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ConfigFileError as exc:  # JOBPOST_CONFIG_FILE names a file that is missing or not TOML
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    except StartRefused as exc:  # a component's start check, or `jobpost topics`
        print("\n".join(f"error: {problem}" for problem in exc.problems), file=sys.stderr, flush=True)
        return 2
    except ValidationError as exc:  # settings from the environment (inputs never quoted: secrets)
        for error in exc.errors(include_input=False):
            where = ".".join(str(part) for part in error["loc"]) or exc.title
            print(f"error: setting {where}: {error['msg']}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
