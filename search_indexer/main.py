"""Entry points: `jobpost indexer` and `jobpost reindex`."""

from __future__ import annotations

import signal

from prometheus_client import start_http_server

from runtime.topics import check_at_start
from search_indexer.config import IndexerSettings
from search_indexer.indexer import SearchIndexer
from search_indexer.reindex import reindex


def run_indexer() -> None:
    settings = IndexerSettings()
    check_at_start(settings.kafka)
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.metrics_host)
    indexer = SearchIndexer(settings)
    signal.signal(signal.SIGTERM, lambda *_: indexer.stop())
    signal.signal(signal.SIGINT, lambda *_: indexer.stop())
    indexer.run()


def run_reindex() -> None:
    def progress(read: int, total: int) -> None:
        print(f"read {read:,} of about {total:,} records", flush=True)

    settings = IndexerSettings()
    check_at_start(settings.kafka)
    report = reindex(settings, progress)
    previous = ", ".join(report.previous) or "none"
    print(f"alias now points to {report.index} ({report.documents} documents); previous: {previous}")
