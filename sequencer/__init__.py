"""The sequencer: the one writer of each posting's versions (a consumer group over
`jobpost.commands`). `member` runs sessions, `session` is one of them (a Kafka transaction
per poll), `domain` decides a command, `placements` predicts where new versions land,
`restore` brings a partition's state up to date on assignment."""
