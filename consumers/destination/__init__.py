"""What every lane of one board shares in a process: the access to the board (the token,
the rate budget, the circuit), the sending of versions in batches and, for an asynchronous
board, the task poller. The pure parts (`budget`, `circuit`, `batcher`, `tasks`) take the
time as an argument; `access`, `sending` and `confirming` are their asyncio shell, and
`shared` is the destination as the lanes see it."""
