"""The API's read side: views of the topics in local stores (`views`, following a topic:
`log_view`, a posting's stored form: `view_state`), a posting's timeline, title search."""
