"""What every lane of one board shares in a process: the access token, the rate budget,
the circuit, the batch and (for an asynchronous board) the task poller. The pure parts
(`budget`, `circuit`, `batcher`, `tasks`) take the time as an argument; `shared` and
`confirming` are their asyncio shell."""
