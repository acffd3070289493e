"""A Kafka client call that hangs, for a test's child process: on PYTHONPATH, Python imports
this at start-up, and when `JOBPOST_TEST_STICK_DIR` is set a transactional producer's
`send_offsets_to_transaction` blocks, once, while the file `stick` exists in that folder,
until `release` appears there, as librdkafka's does when the group coordinator has left the
cluster (confluentinc/librdkafka#5511). Then it makes the call and writes what Kafka
answered to `answered`: `accepted`, or `refused: <error>`."""

import os
import threading
import time
from pathlib import Path

_folder = os.environ.get("JOBPOST_TEST_STICK_DIR")
if _folder:
    import confluent_kafka

    _here = Path(_folder)
    _once = threading.Lock()

    class _StickingProducer(confluent_kafka.Producer):
        def send_offsets_to_transaction(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if not (_here / "stick").exists() or not _once.acquire(blocking=False):
                return super().send_offsets_to_transaction(*args, **kwargs)
            while not (_here / "release").exists():
                time.sleep(0.05)
            try:
                super().send_offsets_to_transaction(*args, **kwargs)
            except confluent_kafka.KafkaException as exc:
                (_here / "answered").write_text(f"refused: {exc.args[0].name()}")
                raise
            (_here / "answered").write_text("accepted")
            return None

    confluent_kafka.Producer = _StickingProducer  # type: ignore[misc]
