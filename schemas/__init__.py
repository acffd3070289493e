"""The shared contract: Avro record schemas, their codec, topic names and Kafka settings."""
