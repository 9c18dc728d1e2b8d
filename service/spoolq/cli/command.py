"""What a ``spoolq`` command is, and the one way a command is registered.

A command is a :class:`Command`: its name, the one-line summary ``spoolq --help`` lists, how its
arguments are declared (``configure``, on an argparse parser whose help ends with ``examples``) and
what runs them (``run``, returning the exit status). The server's commands are listed in
:data:`spoolq.cli.dispatch.SERVER_COMMANDS`; other distributions add theirs through the
``spoolq.commands`` entry-point group (see :mod:`spoolq.cli`), with any object that has the same
``name``, ``summary`` and ``main(argv, prog)``, the :class:`PluginCommand` protocol.

Errors a user can act on are :class:`CliError` (a settings error counts as one, exit 2): ``main``
prints them as one line on stderr, ``spoolq: <message>``, and returns their exit status.

:class:`Command` and :class:`CliError` are twins of the client's ``spoolq_client.cli.command``
ones: the server imports nothing of the client distribution, which installs without the server,
so each keeps its copy (this one also reports a settings error; the client's parses options
between positionals); ``tests/cli/test_twin_helpers.py`` holds the two to the same help, output
and exit statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from spoolq.settings.server import SettingsError


class CliError(Exception):
    """A one-line error for stderr; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class PluginCommand(Protocol):
    """A command another distribution adds through the ``spoolq.commands`` entry-point group."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    def main(self, argv: Sequence[str], prog: str) -> int:
        """Parse ``argv`` (the arguments after the command's name), run, return the exit status;
        errors are reported by the command itself, as one line on stderr."""
        ...


Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """A server command: ``spoolq <name> ...``."""

    name: str
    summary: str  # one line, lower case, no full stop: what ``spoolq --help`` lists
    configure: Callable[[argparse.ArgumentParser], None]  # declares the arguments
    run: Handler
    examples: str  # one example command line per line, shown at the end of ``--help``
    description: str | None = None  # the ``--help`` text above the arguments (default: the summary)

    def parser(self, prog: str | None = None) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(
            prog=prog or f"spoolq {self.name}",
            description=self.description or self.summary[0].upper() + self.summary[1:] + ".",
            epilog="examples:\n" + "\n".join(f"  {line}" for line in self.examples.strip().splitlines()),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        self.configure(p)
        return p

    def main(self, argv: Sequence[str], prog: str | None = None) -> int:
        args = self.parser(prog).parse_args(list(argv))
        try:
            return self.run(args)
        except SettingsError as e:
            print(f"spoolq: {e}", file=sys.stderr)
            return 2
        except CliError as e:
            print(f"spoolq: {e}", file=sys.stderr)
            return e.code
