"""How ``spoolq`` meets the commands of the other distributions: through the ``spoolq.commands``
entry points only, the one place a client command is registered (the server and ``spoolq-client``
both read them), and a command of a package not installed named with that package in one line."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from spoolq.cli import dispatch
from spoolq_client.cli import commands
from spoolq_client.cli import dispatch as client_dispatch

CHECKOUT = Path(__file__).resolve().parents[2]


def _entry_points(pyproject: Path) -> dict[str, str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    return dict(project.get("entry-points", {}).get(dispatch.ENTRY_POINT_GROUP, {}))


def test_a_client_command_is_registered_in_one_place_its_entry_point() -> None:
    declared = _entry_points(CHECKOUT / "clients/python/pyproject.toml")
    assert sorted(c.name for c in commands()) == sorted(declared)  # spoolq-client reads the entry points
    for command in commands():
        module, _, attr = declared[command.name].partition(":")
        assert EntryPoint(command.name, declared[command.name], dispatch.ENTRY_POINT_GROUP).load() is command
        assert module.startswith("spoolq_client.cli.") and attr == attr.upper()
    assert _entry_points(CHECKOUT / "clients/spark/pyproject.toml") == {
        "pipeline": "spoolq_spark.pipelines.command:PIPELINE"}
    assert _entry_points(CHECKOUT / "pyproject.toml") == {}  # the server's commands are its own
    server = {c.name for c in dispatch.SERVER_COMMANDS}
    assert set(client_dispatch.ELSEWHERE) == server | {"pipeline"}
    # the server names them only to say which package to install, and its names are theirs
    assert sorted(dispatch.SIBLING_COMMANDS["spoolq-client"]) == sorted(declared)
    assert dispatch.SIBLING_COMMANDS["spoolq-spark"] == tuple(_entry_points(CHECKOUT / "clients/spark/pyproject.toml"))


def test_no_module_of_the_server_imports_the_client_or_spark() -> None:
    found = []
    for path in (CHECKOUT / "service/spoolq").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("spoolq_client", "spoolq_spark")]
    assert found == []


@pytest.mark.parametrize(("command", "package"), [("send", "spoolq-client"), ("queues", "spoolq-client"),
                                                  ("settings", "spoolq-client"), ("pipeline", "spoolq-spark")])
def test_a_command_of_a_package_not_installed_names_the_package(
        command: str, package: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    others = [ep for ep in dispatch.entry_points(group=dispatch.ENTRY_POINT_GROUP)
              if ep.dist is not None and ep.dist.name != package]
    monkeypatch.setattr(dispatch, "entry_points", lambda group: others)  # only `package` is not installed
    assert dispatch.main([command, "q", "--json"]) == 2
    err = capsys.readouterr().err
    assert err == f"spoolq: '{command}' is a command of {package}, not installed here ({package} adds " \
                  f"{dispatch.SIBLINGS[package]}): install {package}\n"
    assert "-e " not in err and "clients/" not in err
    dispatch.main(["--help"])
    assert f"not installed here (install {package}):" in capsys.readouterr().out


def test_with_no_other_package_installed_a_command_names_its_one_package_an_unknown_one_both(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(dispatch, "entry_points", lambda group: [])
    assert dispatch.main(["send", "q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(": install spoolq-client\n") and "spoolq-spark" not in err
    assert dispatch.main(["frobnicate", "q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spoolq-client (" in err and "spoolq-spark (" in err


def test_an_entry_point_that_cannot_load_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    broken = EntryPoint("send", "spoolq_client_gone.cli:SEND", dispatch.ENTRY_POINT_GROUP)
    monkeypatch.setattr(dispatch, "entry_points", lambda group: [broken])
    assert dispatch.main(["send", "q", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot load" in err and "spoolq_client_gone" in err


def test_an_unknown_command_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main(["sned", "q"]) == 2
    assert capsys.readouterr().err == "spoolq: no command 'sned' (did you mean send?); `spoolq --help` lists them\n"
    assert dispatch.main([]) == 2
    assert capsys.readouterr().err.startswith("usage: spoolq")


def test_help_lists_every_installed_command_under_its_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "commands of spoolq (the server):" in out and "commands of spoolq-client:" in out
    for name in [c.name for c in dispatch.SERVER_COMMANDS] + [c.name for c in commands()]:
        assert f"\n  {name} " in out, name


def test_spoolq_client_runs_the_client_commands_and_names_the_server_package(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert client_dispatch.main(["serve", "--root", "/tmp/x"]) == 2
    assert capsys.readouterr().err == ("spoolq-client: 'serve' is a command of the spoolq package, not of "
                                       "spoolq-client: install spoolq and run `spoolq serve`\n")
    assert client_dispatch.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n  {c.name} " in out for c in commands())
    with pytest.raises(SystemExit):
        client_dispatch.main(["send", "--help"])
    assert capsys.readouterr().out.startswith("usage: spoolq-client send")
