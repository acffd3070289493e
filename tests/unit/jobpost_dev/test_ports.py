"""A taken port is named with the setting that moves it and what holds it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from jobpost_dev.ports import Port, holder, refusals, taken


@pytest.fixture
def held() -> Iterator[int]:
    """A port this test process listens on."""
    with socket.create_server(("127.0.0.1", 0)) as listening:
        yield listening.getsockname()[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def this_command() -> str:
    with open("/proc/self/cmdline", "rb") as cmdline:
        return cmdline.read().replace(b"\0", b" ").decode().strip()[:157]


def test_a_taken_port_is_named_with_its_setting_and_the_pid_holding_it(held: int) -> None:
    (line,) = refusals([Port(held, "api", "JOBPOST_API_PORT")])

    assert line.startswith(f"port {held} (api) is taken, held by pid {os.getpid()} (")
    assert this_command()[:100] in line
    assert line.endswith("; JOBPOST_API_PORT moves it")


def test_free_ports_refuse_nothing() -> None:
    assert refusals([Port(free_port(), "api", "JOBPOST_API_PORT")]) == []


def test_a_port_wanted_twice_is_named_with_both_settings() -> None:
    port = free_port()

    (line,) = refusals([Port(port, "api", "JOBPOST_API_PORT"), Port(port, "sandbox", "JOBPOST_SANDBOX_PORT")])

    assert line == (
        f"port {port} is wanted twice, by api (JOBPOST_API_PORT) and by sandbox (JOBPOST_SANDBOX_PORT);"
        " set one of them to move it"
    )


def test_what_holds_a_port_nobody_listens_on_is_unknown() -> None:
    port = free_port()

    assert not taken(port)
    assert holder(port) == "unknown"


def test_a_connection_closed_a_moment_ago_does_not_make_a_port_taken() -> None:
    # The server side closes first, so its port is left in TIME_WAIT, as after a stopped run.
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listening.accept()
        accepted.close()
    client.close()

    assert not taken(port)
