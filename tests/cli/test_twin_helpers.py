"""The helpers the server and the client distributions each keep a copy of, held to the same answers.

The server (``spoolq``) imports nothing of the client (``spoolq_client``) and the client installs
without the server, so a command's :class:`Command` and :class:`CliError`, and the duration parser
and formatter of queue settings, exist once in each. These tests give both copies the same inputs:
a change to one that the other lacks fails here.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest

from spoolq.cli import command as server_command
from spoolq.errors import InvalidArgument
from spoolq.queues import queue_settings as server_settings
from spoolq_client.cli import command as client_command
from spoolq_client.cli import queue_settings as client_settings

GOOD = ["0", "1", "90", "90s", "15m", "12h", "30d", "2w", " 7d ", "5 m", "0w", "1209600", "00042s"]
BAD = ["", " ", "s", "-1", "1.5h", "10y", "5 mins", "1e3", "abc", "7d7", "٣", "x" * 80]


@pytest.mark.parametrize("text", GOOD)
def test_durations_parse_alike(text: str) -> None:
    assert client_settings.parse_duration(text, "retention") == server_settings.parse_duration(text, "retention")


@pytest.mark.parametrize("text", BAD)
def test_durations_are_refused_alike(text: str) -> None:
    with pytest.raises(client_command.CliError) as client_error:
        client_settings.parse_duration(text, "retention")
    with pytest.raises(InvalidArgument) as server_error:
        server_settings.parse_duration(text, "retention")
    assert client_error.value.code == 2  # a usage error
    assert str(client_error.value) == str(server_error.value)


@pytest.mark.parametrize("seconds", [0, 0.5, 1, 59, 60, 90, 3_600, 5_400, 86_400, 604_800, 1_209_600, 2_592_000,
                                     1_000_000, 30.25])
def test_durations_format_alike(seconds: float) -> None:
    assert client_settings.format_duration(seconds) == server_settings.format_duration(seconds)


Commands = tuple[client_command.Command, server_command.Command, list[dict[str, object]]]
EXAMPLES = "spoolq greet ada\nspoolq greet ada --loud --times 2"


def _commands(status: int | None) -> Commands:
    """The same command made with each copy of ``Command``; ``status``: what it returns (None: it
    raises a CliError with status 3). The third value collects the arguments each run saw."""
    seen: list[dict[str, object]] = []

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("who", help="whom to greet")
        p.add_argument("--loud", action="store_true", help="shout")
        p.add_argument("--times", type=int, default=1, help="how often")

    def run(args: argparse.Namespace) -> int:
        seen.append({k: v for k, v in vars(args).items() if k != "prog"})
        if status is None:
            raise (client_command.CliError if len(seen) == 1 else server_command.CliError)("nobody home", 3)
        return status

    summary = "greet someone by name"
    return (client_command.Command("greet", summary, configure, run, EXAMPLES),
            server_command.Command("greet", summary, configure, run, EXAMPLES), seen)


def test_commands_have_the_same_fields() -> None:
    assert [f.name for f in fields(client_command.Command)] == [f.name for f in fields(server_command.Command)]


def test_commands_print_the_same_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    client, server, _ = _commands(0)
    assert client.parser().format_help() == server.parser().format_help()
    prog = "spoolq-client greet"
    assert client.parser(prog).format_help() == server.parser(prog).format_help()


@pytest.mark.parametrize("argv", [["ada"], ["ada", "--loud"], ["--times", "3", "ada"], ["ada", "--times=2", "--loud"]])
def test_commands_run_alike(argv: list[str]) -> None:
    client, server, seen = _commands(5)
    assert client.main(argv) == server.main(argv) == 5
    assert seen[0] == seen[1]


def test_commands_report_errors_alike(capsys: pytest.CaptureFixture[str]) -> None:
    client, server, _ = _commands(None)
    assert client.main(["ada"]) == 3
    client_err = capsys.readouterr().err
    assert server.main(["ada"]) == 3
    assert client_err == capsys.readouterr().err == "spoolq: nobody home\n"
    for command in (client, server):
        with pytest.raises(SystemExit) as usage:
            command.main(["ada", "--times", "many"])
        assert usage.value.code == 2
    assert len({err for err in capsys.readouterr().err.split("\n") if "invalid int value" in err}) == 1
