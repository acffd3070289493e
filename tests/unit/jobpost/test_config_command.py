"""`jobpost config show` and `jobpost config check` as an operator runs them: the effective
value of each setting with where it came from, secrets never printed, and every problem
named at once (exit 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobpost import cli

SECRETS = ("file-kafka-password", "env-linkedin-secret", "dev-token-1")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("JOBPOST_")]:
        monkeypatch.delenv(name)


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "jobpost.toml"
    path.write_text(text)
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(path))
    return path


def shown(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, str], str]:
    """(exit status, {"table.key": the line's value and origin}, the whole output)."""
    status = cli.main(["config", "show", *args])
    out = capsys.readouterr().out
    lines, table = {}, ""
    for line in out.splitlines():
        if line.startswith("["):
            table = line.strip("[]")
        elif " = " in line and table:
            key, _, rest = line.partition(" = ")
            lines[f"{table}.{key.strip()}"] = " ".join(rest.split())
    return status, lines, out


def test_show_says_where_each_value_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(tmp_path, monkeypatch, '[kafka]\nbootstrap_servers = "file:9092"\npartitions = 3\n')
    monkeypatch.setenv("JOBPOST_KAFKA_PARTITIONS", "12")
    monkeypatch.setenv("JOBPOST_API_PORT", "9100")

    status, lines, out = shown(capsys)

    assert status == 0
    assert out.splitlines()[0] == f"# configuration file: {path}"
    assert lines["kafka.bootstrap_servers"] == f'"file:9092" # file {path} [kafka]'
    assert lines["kafka.partitions"] == "12 # environment JOBPOST_KAFKA_PARTITIONS (over the file's [kafka])"
    assert lines["api.port"] == "9100 # environment JOBPOST_API_PORT"
    assert lines["kafka.security_protocol"] == '"PLAINTEXT" # default'
    assert lines["consumer.linkedin.timeout_s"] == "5.0 # default"


def test_show_masks_every_secret_whichever_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(tmp_path, monkeypatch, '[kafka]\nsasl_password = "file-kafka-password"\n')
    monkeypatch.setenv("JOBPOST_CONSUMER_LINKEDIN__CLIENT_SECRET", "env-linkedin-secret")
    monkeypatch.setenv("JOBPOST_API_TOKENS", "dev-token-1")

    status, lines, out = shown(capsys)

    assert status == 0
    assert not [secret for secret in SECRETS if secret in out]
    assert lines["kafka.sasl_password"] == f"********** # file {path} [kafka]"
    assert lines["consumer.linkedin.client_secret"] == (
        "********** # environment JOBPOST_CONSUMER_LINKEDIN__CLIENT_SECRET"
    )
    assert lines["api.tokens"] == "********** # environment JOBPOST_API_TOKENS"


def test_show_for_one_component_shows_only_the_tables_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["config", "show", "--component", "indexer"])

    tables = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]

    assert tables == ["[kafka]", "[schema_registry]", "[indexer]", "[indexer.elasticsearch]"]


def test_show_says_which_table_cannot_be_read_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_SEQUENCER_MAX_BATCH", "many")

    status, lines, out = shown(capsys)

    assert status == 2
    assert "[sequencer]\n# not readable: max_batch: Input should be a valid integer" in out
    assert lines["api.port"] == "8000 # default"  # the other tables still shown


def test_check_names_every_problem_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(
        tmp_path,
        monkeypatch,
        "[kafka]\npartitions = 0\n"
        "[api]\nprot = 9000\nwrite_timeout_s = 1\nverdict_margin_s = 2\n"
        "[api.kafka]\npartitions = 2\n"
        '[consumer.linkedin]\nbase_url = "https://api.linkedin.com"\nbsae_url = "x"\n'
        "[kafak]\npartitions = 1\n",
    )
    monkeypatch.setenv("JOBPOST_INDEXER_MAX_BATCH", "lots")
    monkeypatch.setenv("JOBPOST_CONSUMER_LINKEDIN__CLIENT_SECRET", "env-linkedin-secret")

    status = cli.main(["config", "check"])
    out = capsys.readouterr().out

    assert status == 2
    errors = [line.removeprefix("error: ") for line in out.splitlines() if line.startswith("error: ")]
    expected = [
        "api.prot in the configuration file is no setting (did you mean port?)",
        "[api.kafka] in the configuration file: it is read from [kafka]",
        "consumer.linkedin.bsae_url in the configuration file is no setting (did you mean base_url?)",
        "[kafak] in the configuration file is no table of jobpost's (did you mean kafka?)",
        "kafka.partitions (JOBPOST_KAFKA_PARTITIONS): Input should be greater than or equal to 1",
        "[api]: verdict_margin_s must be shorter than write_timeout_s",
        "indexer.max_batch (JOBPOST_INDEXER_MAX_BATCH): Input should be a valid integer, unable to parse"
        " string as an integer",
    ]
    assert errors[: len(expected)] == expected
    (board,) = errors[len(expected) :]
    assert board.startswith("consumer.linkedin: https://api.linkedin.com is a real board: ")
    assert out.splitlines()[-1] == f"{len(errors)} problems"
    assert "env-linkedin-secret" not in out


def test_check_names_what_a_component_would_refuse_at_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_CONSUMER_INDEED__BASE_URL", "https://apis.indeed.com")

    assert cli.main(["config", "check"]) == 2
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("error: ")]

    assert errors == [
        "error: api: no credentials: set api.tokens (JOBPOST_API_TOKENS), api.credentials_file or"
        " api.oidc.jwks_url; the API refuses to start without one",
        "error: consumer.indeed: https://apis.indeed.com is a real board:"
        " JOBPOST_CONSUMER_INDEED__CLIENT_ID / JOBPOST_CONSUMER_INDEED__CLIENT_SECRET are missing or the"
        " sandbox's; JOBPOST_CONSUMER_INDEED__TOKEN_URL is not set (the default is the sandbox's path);"
        " JOBPOST_CONSUMER_INDEED__EMPLOYERS_FILE is not set (the built-in registry is the sandbox's)",
    ]


def test_check_passes_a_sound_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(tmp_path, monkeypatch, '[kafka]\nbootstrap_servers = "kafka:9092"\n[api]\ntokens = "t"\n')

    status = cli.main(["config", "check"])

    assert (status, capsys.readouterr().out) == (0, "ok: the settings of every component are valid\n")


def test_check_of_one_component_leaves_the_others_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_INDEXER_MAX_BATCH", "lots")  # not the sequencer's

    assert cli.main(["config", "check", "--component", "sequencer"]) == 0
    assert cli.main(["config", "check", "--component", "indexer"]) == 2
    assert "indexer.max_batch (JOBPOST_INDEXER_MAX_BATCH)" in capsys.readouterr().out


def test_a_missing_file_is_named_by_check_and_by_every_component(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(tmp_path / "absent.toml"))

    assert cli.main(["config", "check"]) == 2
    assert f"error: configuration file {tmp_path / 'absent.toml'}: No such file" in capsys.readouterr().out
    assert cli.main(["topics"]) == 2
    assert f"error: configuration file {tmp_path / 'absent.toml'}: No such file" in capsys.readouterr().err


def test_credentials_written_in_a_url_are_shown_moved_and_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_URL", "https://elastic:pw-in-url@search:9200")

    status, lines, out = shown(capsys, "--component", "indexer")

    assert status == 0
    assert "pw-in-url" not in out
    assert lines["indexer.elasticsearch.url"] == (
        '"https://search:9200" # environment JOBPOST_INDEXER_ELASTICSEARCH_URL'
    )
    assert lines["indexer.elasticsearch.username"] == '"elastic" # derived'
    assert lines["indexer.elasticsearch.password"] == "********** # derived"
