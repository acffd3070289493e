"""Kafka's three KRaft nodes (JOBPOST_STACK_BROKERS=3) managed as one server named "kafka".

A node alone cannot answer: two of the three controllers must be up to elect a leader. So
`start` launches every node that is not running before it waits, then waits until every
node answers and lists all three brokers; nodes already running are left alone, so a
killed node comes back by starting again. `stop` signals all nodes at once: a node told to
stop after the others are gone waits for a quorum that cannot form.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from jobpost_dev.stack.kafka import KafkaServer, kafka_nodes, metadata_brokers
from jobpost_dev.stack.process import Managed, Progress, Server, end_groups, quiet
from jobpost_dev.stack.settings import StackError, StackSettings


class KafkaCluster:
    """The three nodes of kafka_nodes(settings), started and stopped together."""

    name = "kafka"
    look_every_s = 0.5  # while start() waits: how often it asks the nodes

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.nodes = kafka_nodes(settings)
        self.launched: list[KafkaServer] = []  # by start() on this object, until stopped

    def members(self) -> list[Server]:
        return list(self.nodes)

    def addresses(self) -> list[str]:
        return [node.address for node in self.nodes]

    def fetch(self, progress: Progress = quiet) -> None:
        self.nodes[0].fetch(progress)  # the nodes share the jars

    def fetched_into(self) -> Path:
        return self.nodes[0].fetched_into()

    def running(self) -> bool:
        return all(node.running() for node in self.nodes)

    def down(self) -> list[KafkaServer]:
        """The nodes start() would start: those whose pid file names no live process."""
        return [node for node in self.nodes if not node.running()]

    def start(self, progress: Progress = quiet) -> bool:
        """Start the nodes that are not running, then wait for the whole cluster; True when
        this call started any."""
        down = self.down()
        if not down:
            return False
        for node in down:
            node.check_free()
        self.fetch(progress)
        self.prepare(down)
        progress(f"kafka: starting {', '.join(node.name for node in down)} ...")
        launched: list[tuple[KafkaServer, subprocess.Popen[bytes]]] = []
        try:
            for node in down:
                launched.append((node, node.launch()))
            self._wait(launched)
        except BaseException:
            # Ctrl-C, SIGTERM or a failure while waiting: leave no node of this call behind.
            end_groups([proc.pid for _node, proc in launched], timeout=30.0)
            for node, _proc in launched:
                node.pid_file.unlink(missing_ok=True)
            raise
        self.launched += [node for node, _proc in launched]
        return True

    def prepare(self, nodes: list[KafkaServer]) -> None:
        """Write the nodes' configs; format the unformatted ones, in parallel, with the
        cluster id the others already have (or a new one)."""
        for node in nodes:
            node.write_config()
        unformatted = [node for node in nodes if not node.formatted()]
        if not unformatted:
            return
        cluster_id = unformatted[0].cluster_id()
        formats = [
            (
                node,
                subprocess.Popen(
                    node.format_command(cluster_id), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                ),
            )
            for node in unformatted
        ]
        failed = []
        for node, proc in formats:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                failed.append(f"{node.name}:\n{output.decode(errors='replace')}")
        if failed:
            raise StackError("formatting Kafka storage failed for " + "\n".join(failed))

    def answers(self) -> bool:
        """Every node answers a metadata request that lists all the nodes as live brokers."""
        everyone = {node.node_id for node in self.nodes}
        return all(metadata_brokers(node.address) == everyone for node in self.nodes)

    def _wait(self, launched: list[tuple[KafkaServer, subprocess.Popen[bytes]]]) -> None:
        deadline = time.monotonic() + self.settings.start_timeout_s
        while not self.answers():
            for node, proc in launched:
                if proc.poll() is not None:
                    tail = node.log_file.read_text(errors="replace")[-3000:]
                    raise StackError(
                        f"gave up waiting for the Kafka cluster: {node.name} exited. Log tail:\n{tail}"
                    )
            if time.monotonic() > deadline:
                logs = ", ".join(str(node.log_file) for node, _proc in launched)
                raise StackError(
                    f"gave up waiting for the Kafka cluster after {self.settings.start_timeout_s:.0f} s;"
                    f" see {logs}"
                )
            time.sleep(self.look_every_s)

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop every running node, all at once; True when any was running."""
        return self._stop(self.nodes, timeout)

    def stop_launched(self) -> bool:
        """Stop the nodes start() launched (all at once), leaving the others running."""
        return self._stop(self.launched, timeout=60.0)

    def _stop(self, nodes: list[KafkaServer], timeout: float) -> bool:
        running = [(node, node.pid()) for node in nodes]
        pids = [pid for _node, pid in running if pid is not None]
        if pids:
            end_groups(pids, timeout)
        for node in nodes:
            node.pid_file.unlink(missing_ok=True)
        self.launched = [node for node in self.launched if node not in nodes]
        return bool(pids)


def kafka_for(settings: StackSettings) -> Managed:
    """The stack's Kafka: one node ("kafka"), or the three-node cluster."""
    return KafkaServer(settings) if settings.brokers == 1 else KafkaCluster(settings)
