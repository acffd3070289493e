"""Settings of the search_indexer deployable."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from runtime.kafka import KafkaSettings
from runtime.search_server import ElasticsearchSettings, settings_of
from runtime.settings_file import Settings
from schemas.topics import Component, Topics


class IndexerSettings(Settings):
    """Environment prefix `JOBPOST_INDEXER_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_INDEXER_")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    # JOBPOST_INDEXER_ELASTICSEARCH_URL, _API_KEY, _USERNAME, _PASSWORD, _CA_BUNDLE
    elasticsearch: ElasticsearchSettings = Field(default_factory=lambda: settings_of("indexer"))
    group_id: str | None = Field(default=None, description="default: <topic prefix>-search-indexer")
    alias: str = Field(default="job-postings", description="searches and writes go through this alias")
    index_description: bool = Field(default=False, description="make description full-text searchable")
    replicas: int = Field(default=0, ge=0, description="replicas of each index (0 on one node)")
    # 5,000 measured 0.65-0.74 of a direct helpers.bulk load; 1,000 measured 0.36-0.51.
    max_batch: int = Field(default=5000, ge=1, description="records per bulk request at most")

    metrics_port: int = Field(default=0, ge=0, description="serve /metrics on <metrics_host>:<port> (0: off)")
    metrics_host: str = Field(default="127.0.0.1", description="0.0.0.0 in a container")
    retry_max_wait_s: float = Field(default=30.0, gt=0, description="longest wait between bulk retries")

    @property
    def group(self) -> str:
        return self.group_id or Topics(self.kafka.topic_prefix).group(Component.SEARCH_INDEXER)
