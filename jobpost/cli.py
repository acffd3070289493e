"""`jobpost`: one command line for every component and for the local servers."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import sys

from pydantic import ValidationError

from jobpost import stack
from runtime.connection import StartRefused
from runtime.kafka import KafkaSettings
from runtime.schema_registry import SchemaRegistryError
from runtime.topics import ensure_topics
from schemas.topics import BOARDS, Topics


def _stack(args: argparse.Namespace) -> int:
    settings = stack.StackSettings()
    servers = stack.servers(settings, registry=True if args.only == "registry" else None)
    if args.only:
        servers = [s for s in servers if s.name == args.only]
    if args.json and args.action != "status":
        print("error: --json goes with status", file=sys.stderr)
        return 2
    if args.action == "fetch":
        for server in servers:
            server.fetch(progress=_say)
            print(f"{server.name}: fetched into {server.fetched_into()}")
    elif args.action == "start":
        for server in servers:
            started = server.start(progress=_say)
            logs = ", ".join(str(member.log_file) for member in server.members())
            print(f"{server.name}: {'started' if started else 'already running'} (log {logs})")
    elif args.action == "stop":
        for server in reversed(servers):
            print(f"{server.name}: {'stopped' if server.stop() else 'not running'}")
    else:
        for server in servers:
            for member in server.members():  # Kafka's three nodes: kafka-1, kafka-2, kafka-3
                print(_status(member, as_json=args.json))
    return 0


def _status(server: stack.Server, *, as_json: bool) -> str:
    pid = server.pid()
    if as_json:
        return json.dumps(
            {"name": server.name, "pid": pid, "addresses": server.addresses(), "running": pid is not None}
        )
    return f"{server.name}: {f'running, pid {pid}' if pid else 'stopped'}"


def _say(message: str) -> None:
    print(message, flush=True)


def _version() -> str:
    try:
        return importlib.metadata.version("jobpost")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _topics(args: argparse.Namespace) -> int:
    created = ensure_topics(KafkaSettings())
    print("created: " + (", ".join(created) if created else "nothing (all topics exist and match)"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobpost", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser(
        "stack", help="fetch, start, stop the local Kafka and Elasticsearch (and the schema registry)"
    )
    p.add_argument("action", choices=["fetch", "start", "stop", "status"])
    p.add_argument("--only", choices=["kafka", "elasticsearch", "registry"])
    p.add_argument("--json", action="store_true", help="status: one JSON object per server per line")
    p.set_defaults(func=_stack)

    p = commands.add_parser("doctor", help="check (and with --obtain, get) what make test needs")
    p.add_argument("--obtain", action="store_true", help="install what is missing where possible (chromium)")
    p.set_defaults(func=_doctor)

    p = commands.add_parser("topics", help="create every topic idempotently and check existing ones")
    p.set_defaults(func=_topics)

    for name, help_text in (
        ("run", "start the local servers and every component; Ctrl-C stops them all"),
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
        "dlq", help="list a board's dead letters, or ask its consumer to attempt them again (redrive)"
    )
    p.add_argument("action", choices=["list", "redrive"])
    p.add_argument("destination", choices=[board.value for board in BOARDS])
    p.add_argument("--wait", type=float, default=60.0, help="redrive: seconds to wait for the outcomes")
    p.set_defaults(func=_dlq)

    p = commands.add_parser("chaos", help="faults under load on three brokers and two replicas of everything")
    p.add_argument("--short", action="store_true", help="the two-minute run of make test")
    p.add_argument("--duration", type=float, help="seconds of load (default 300; short: 100)")
    p.set_defaults(func=_chaos)

    p = commands.add_parser("sandbox", help="the job-board sandbox imitating LinkedIn and Indeed")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8090)
    p.set_defaults(func=_sandbox)
    return parser


def _doctor(args: argparse.Namespace) -> int:
    from jobpost.doctor import main as doctor

    return doctor(args.obtain)


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


def _chaos(args: argparse.Namespace) -> int:
    from jobpost.chaos.run import Plan, run, short_plan

    plan = short_plan() if args.short else Plan()
    if args.duration:
        plan.duration_s = args.duration
    report = run(plan)
    print("\n".join(report.lines()), flush=True)
    return 0 if report.kept_every_promise else 1


def _sandbox(args: argparse.Namespace) -> int:
    import uvicorn

    from jobpost.sandbox import create_sandbox

    # A call the sandbox holds (a fault that delays its answer) does not hold its stop.
    uvicorn.run(
        create_sandbox(), host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=5
    )
    return 0


def _logging(component: str) -> None:
    """Services log JSON lines; the commands a person runs log plain text."""
    if component in ("run", "reindex"):
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
        if name == "run":
            from jobpost.supervisor import run as supervise

            return supervise()
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
    except stack.StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except SchemaRegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
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
