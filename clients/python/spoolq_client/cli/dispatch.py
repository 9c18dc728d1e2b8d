"""``spoolq-client COMMAND ...`` (and ``python -m spoolq_client``): the client commands where the
server's ``spoolq`` command is not installed. Beside it, ``spoolq COMMAND`` runs the same commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from spoolq_client.cli.command import Command
from spoolq_client.cli.create import CREATE
from spoolq_client.cli.messages import ACK, PEEK, POLL, SEND, TAIL
from spoolq_client.cli.queue_settings import SETTINGS
from spoolq_client.cli.queues import MOVE, PURGE, QUEUES, SIZE

#: every client command, in the order ``--help`` lists them
COMMANDS: tuple[Command, ...] = (SEND, POLL, ACK, PEEK, TAIL, SIZE, PURGE, MOVE, QUEUES, CREATE, SETTINGS)

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
    for command in COMMANDS:
        if command.name == name:
            return command.main(rest, f"{prog} {name}")
    if name in ELSEWHERE:
        print(f"{prog}: '{name}' is a command of the {ELSEWHERE[name]} package, not of spoolq-client: install "
              f"{ELSEWHERE[name]} and run `spoolq {name}`", file=sys.stderr)
    else:
        print(f"{prog}: no command {name!r}; `{prog} --help` lists them", file=sys.stderr)
    return 2


def _help(prog: str) -> str:
    rows = [f"  {c.name:<10} {c.summary}" for c in COMMANDS]
    return "\n".join([f"usage: {prog} [-h] [--version] COMMAND [ARGS...]", "",
                      "The spoolq client commands over HTTP (the same as `spoolq COMMAND` where the spoolq "
                      f"server package is installed). `{prog} COMMAND --help` shows a command's arguments.", "",
                      "commands:", *rows])


def _version() -> str:
    try:
        return version("spoolq-client")
    except PackageNotFoundError:
        return "unknown"
