"""``spoolq-client COMMAND ...`` (and ``python -m spoolq_client``): the client commands where the
server's ``spoolq`` command is not installed. Beside it, ``spoolq COMMAND`` runs the same commands.

The commands are this distribution's ``spoolq.commands`` entry points (its ``pyproject.toml``), the
one list of them: ``spoolq`` finds them there, and so does this dispatcher (:func:`commands`), which
loads only the command it runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, version

from spoolq_client.cli.command import Command

#: the entry-point group of the commands (the server's ``spoolq`` reads the same group)
ENTRY_POINT_GROUP = "spoolq.commands"
DISTRIBUTION = "spoolq-client"


def _entry_points() -> list[EntryPoint]:
    """This distribution's commands (by name: the installed metadata keeps them sorted)."""
    try:
        declared = distribution(DISTRIBUTION).entry_points
    except PackageNotFoundError:  # not installed: run from a bare checkout on sys.path
        return []
    return [ep for ep in declared if ep.group == ENTRY_POINT_GROUP]


def commands() -> tuple[Command, ...]:
    """Every client command, as ``--help`` lists them (each entry point loaded)."""
    return tuple(ep.load() for ep in _entry_points())


#: commands of the other distributions, which ``spoolq`` runs where they are installed
ELSEWHERE = {**dict.fromkeys(("serve", "check-config", "backup", "restore", "hash-key"), "spoolq"),
             "pipeline": "spoolq-spark"}

PROG = "spoolq-client"


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run a client command with ``argv`` (default: the process's arguments); the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_help(prog), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name == "--version":
        print(f"{prog} {_version()}")
        return 0
    for entry in _entry_points():
        if entry.name == name:
            command: Command = entry.load()
            return command.main(rest, f"{prog} {name}")
    if name in ELSEWHERE:
        print(f"{prog}: '{name}' is a command of the {ELSEWHERE[name]} package, not of spoolq-client: install "
              f"{ELSEWHERE[name]} and run `spoolq {name}`", file=sys.stderr)
    else:
        print(f"{prog}: no command {name!r}; `{prog} --help` lists them", file=sys.stderr)
    return 2


def _help(prog: str) -> str:
    rows = [f"  {c.name:<10} {c.summary}" for c in commands()]
    return "\n".join([f"usage: {prog} [-h] [--version] COMMAND [ARGS...]", "",
                      "The spoolq client commands over HTTP (the same as `spoolq COMMAND` where the spoolq "
                      f"server package is installed). `{prog} COMMAND --help` shows a command's arguments.", "",
                      "commands:", *rows])


def _version() -> str:
    try:
        return version("spoolq-client")
    except PackageNotFoundError:
        return "unknown"
