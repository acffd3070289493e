"""Which servers the tests pick: environment, then Docker, then the local servers."""

import shlex

import pytest

from tests.servers import choose, kafka_start_script


def docker(answer: bool):
    asked = []

    def answers() -> bool:
        asked.append(True)
        return answer

    answers.asked = asked  # type: ignore[attr-defined]
    return answers


def test_a_server_named_by_the_environment_wins_and_docker_is_not_even_asked():
    answers = docker(True)
    assert choose({"KAFKA_BOOTSTRAP_SERVERS": "kafka:9092"}, "KAFKA_BOOTSTRAP_SERVERS", answers) == "env"
    assert answers.asked == []


def test_docker_when_it_answers():
    assert choose({}, "ELASTICSEARCH_URL", docker(True)) == "docker"


def test_local_servers_otherwise():
    answers = docker(False)
    assert choose({}, "ELASTICSEARCH_URL", answers) == "local"
    assert answers.asked == [True]


@pytest.mark.parametrize("env", [{"ELASTICSEARCH_URL": ""}, {"KAFKA_BOOTSTRAP_SERVERS": "kafka:9092"}])
def test_an_empty_or_other_variable_names_no_server(env):
    assert choose(env, "ELASTICSEARCH_URL", docker(False)) == "local"


def test_kafka_advertises_the_published_port_to_clients_and_itself_inside_the_container():
    export, run = kafka_start_script("127.0.0.1", 32781).splitlines()
    assert shlex.split(export) == [
        "export",
        "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:32781,BROKER://localhost:9093",
    ]
    assert run == "exec /etc/kafka/docker/run"
