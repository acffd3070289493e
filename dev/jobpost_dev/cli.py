"""The development commands of `jobpost`: `run`, `stack`, `doctor`, `chaos`, `sandbox`.

jobpost's command line finds them through the entry-point group `jobpost.commands`
(dev/pyproject.toml): each entry point adds one sub-command to the parser it is given. They
exist where jobpost-dev is installed (`make` installs it), never in the product's image.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from jobpost_dev.stack.settings import StackError

if TYPE_CHECKING:
    from jobpost_dev import stack

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler = Callable[[argparse.Namespace], int]


def add_run(commands: Commands) -> None:
    p = commands.add_parser("run", help="start the local servers and every component; Ctrl-C stops them all")
    p.set_defaults(func=_guarded(_run))


def add_stack(commands: Commands) -> None:
    p = commands.add_parser(
        "stack", help="fetch, start, stop the local Kafka and Elasticsearch (and the schema registry)"
    )
    p.add_argument("action", choices=["fetch", "start", "stop", "status"])
    p.add_argument("--only", choices=["kafka", "elasticsearch", "registry"])
    p.add_argument("--json", action="store_true", help="status: one JSON object per server per line")
    p.set_defaults(func=_guarded(_stack))


def add_doctor(commands: Commands) -> None:
    p = commands.add_parser("doctor", help="check (and with --obtain, get) what make test needs")
    p.add_argument("--obtain", action="store_true", help="install what is missing where possible (chromium)")
    p.set_defaults(func=_guarded(_doctor))


def add_chaos(commands: Commands) -> None:
    p = commands.add_parser("chaos", help="faults under load on three brokers and two replicas of everything")
    p.add_argument("--short", action="store_true", help="the two-minute run of make test")
    p.add_argument("--duration", type=float, help="seconds of load (default 300; short: 100)")
    p.set_defaults(func=_guarded(_chaos))


def add_sandbox(commands: Commands) -> None:
    p = commands.add_parser("sandbox", help="the job-board sandbox imitating LinkedIn and Indeed")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8090)
    p.add_argument(
        "--stop-within",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="after SIGTERM, how long calls it holds may still finish (default 5)",
    )
    p.set_defaults(func=_guarded(_sandbox))


def _guarded(handler: Handler) -> Handler:
    """A local server that cannot be fetched, started or stopped: one line, exit status 1."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except StackError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

    return run


def _run(_args: argparse.Namespace) -> int:
    # The command a person runs logs plain text (the components it starts log JSON lines).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    from jobpost_dev.run import run

    return run()


def _stack(args: argparse.Namespace) -> int:
    from jobpost_dev import stack

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


def _doctor(args: argparse.Namespace) -> int:
    from jobpost_dev.doctor import main as doctor

    return doctor(args.obtain)


def _chaos(args: argparse.Namespace) -> int:
    from jobpost_dev.chaos.run import Plan, run, short_plan

    plan = short_plan() if args.short else Plan()
    if args.duration:
        plan.duration_s = args.duration
    report = run(plan)
    print("\n".join(report.lines()), flush=True)
    return 0 if report.kept_every_promise else 1


def _sandbox(args: argparse.Namespace) -> int:
    import uvicorn

    from jobpost_dev.sandbox import create_sandbox

    # A call the sandbox holds (a fault that delays its answer) does not hold its stop.
    uvicorn.run(
        create_sandbox(),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=args.stop_within,
    )
    return 0
