"""``spoolq completion bash|zsh``: the shell's tab completion of ``spoolq`` (and ``spoolq-client``).

The script is made by shtab from one argparse parser with a subcommand per command: every
command's arguments as its own ``--help`` shows them, so completion never drifts from the
commands. Under ``spoolq`` the server's commands (serve, check-config, ...) are completed too
where the server package is installed. Install it once::

    spoolq completion bash > ~/.local/share/bash-completion/completions/spoolq
    spoolq completion zsh > "${fpath[1]}/_spoolq"
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterable
from typing import Any

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.dispatch import commands

SHELLS = ("bash", "zsh")


def _server_commands() -> Iterable[Any]:
    """The server's commands, where the server package is installed (none otherwise)."""
    try:
        dispatch = importlib.import_module("spoolq.cli.dispatch")
    except ImportError:
        return ()
    return tuple(getattr(dispatch, "SERVER_COMMANDS", ()))


def full_parser(prog: str) -> argparse.ArgumentParser:
    """One parser for ``prog`` with every command as a subcommand (server commands under ``spoolq``)."""
    parser = argparse.ArgumentParser(prog=prog, description="spoolq commands")
    parser.add_argument("--version", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    every = [*(_server_commands() if prog == "spoolq" else ()), *commands()]
    for command in every:
        child = sub.add_parser(command.name, help=command.summary, description=command.summary)
        command.configure(child)
    return parser


def _run(args: argparse.Namespace) -> int:
    import shtab

    prog = args.prog
    if prog not in ("spoolq", "spoolq-client"):
        raise CliError("completion is for a command on PATH: run `spoolq completion` or `spoolq-client completion`", 2)
    print(shtab.complete(full_parser(prog), shell=args.shell), end="")
    return 0


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


COMPLETION = Command("completion", "print the shell's tab completion script (bash, zsh)", _arguments, _run,
                     examples="""
spoolq completion bash > ~/.local/share/bash-completion/completions/spoolq
spoolq completion zsh > ~/.zfunc/_spoolq     # a directory on zsh's $fpath""")
