"""Entry points: `jobpost indexer` and `jobpost reindex`."""

from __future__ import annotations

import signal

from search_indexer.config import IndexerSettings
from search_indexer.indexer import SearchIndexer
from search_indexer.reindex import reindex


def run_indexer() -> None:
    indexer = SearchIndexer(IndexerSettings())
    signal.signal(signal.SIGTERM, lambda *_: indexer.stop())
    signal.signal(signal.SIGINT, lambda *_: indexer.stop())
    indexer.run()


def run_reindex() -> None:
    report = reindex(IndexerSettings())
    previous = ", ".join(report.previous) or "none"
    print(f"alias now points to {report.index} ({report.documents} documents); previous: {previous}")
