"""The runtime core every deployable shares: Kafka settings and helpers, replaying a log,
writes acknowledged before a commit (outbox), local state per partition (stores), reading
records and recognising bad ones, dead letters and delivery records, topics' creation,
structured logs. It builds on the contract (`schemas`) and knows no deployable."""
