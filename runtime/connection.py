"""The check every component makes of its Kafka before it starts: it connects, or it says why not.

Without it a wrong CA, password or listener shows as a client retrying in the background
forever (librdkafka reconnects by itself), a process that never becomes ready and a log full
of reconnects. With it the process exits at once with status 2 and one line per problem.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients

# Errors that retrying cannot mend: the TLS handshake (a CA that did not sign the broker's
# certificate, a host name the certificate does not name) or the SASL exchange failed.
_FATAL = {KafkaError._SSL, KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}


class StartRefused(Exception):
    """A component cannot work with the Kafka it was given; each problem is one line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def connected_admin(settings: KafkaSettings, timeout_s: float | None = None) -> AdminClient:
    """An admin client that has answered a metadata request, or StartRefused saying why not:
    at the first TLS or authentication error, else once `start_timeout_s` has passed."""
    errors: list[KafkaError] = []
    where = f"Kafka at {settings.bootstrap_servers} ({settings.security_protocol})"
    try:
        admin = KafkaClients(settings).admin(on_error=errors.append)
    except KafkaException as exc:  # an unknown property or a value librdkafka refuses
        raise StartRefused([f"the Kafka settings are refused: {exc.args[0].str()}"]) from exc
    timeout_s = timeout_s or settings.start_timeout_s
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.list_topics(timeout=1.0)
            return admin
        except KafkaException as exc:
            errors.append(exc.args[0])
        admin.poll(0)  # serves error_cb: the handshake's errors arrive there
        fatal = [e for e in errors if e.code() in _FATAL]
        if fatal:
            raise StartRefused([f"{where}: {fatal[0].str()}", _hint(fatal[0])])
        if time.monotonic() > deadline:
            seen = list(dict.fromkeys(e.str() for e in errors))[-3:]
            raise StartRefused([f"{where} did not answer within {timeout_s:.0f} s", *seen])


def _hint(error: KafkaError) -> str:
    if error.code() == KafkaError._SSL:
        return (
            "check JOBPOST_KAFKA_CONFIG__SSL_CA_LOCATION (the CA that signed the broker's certificate)"
            " and that the certificate names the host in JOBPOST_KAFKA_BOOTSTRAP_SERVERS"
        )
    return "check JOBPOST_KAFKA_SASL_MECHANISM, JOBPOST_KAFKA_SASL_USERNAME and JOBPOST_KAFKA_SASL_PASSWORD"
