"""The client commands: ``spoolq send | poll | ack | peek | size | purge | move | tail | queues | settings``.

They talk to a running service over HTTP through :class:`spoolq_client.SpoolqClient` and need
neither the server nor its store. Each is a :class:`~spoolq_client.cli.command.Command` in its
module, registered in one place: under its name in this distribution's ``spoolq.commands`` entry
points (``pyproject.toml``), where the server's ``spoolq`` command and ``spoolq-client`` both find it
(:func:`commands`). Where only this package is installed, ``spoolq-client
<command>`` (or ``python -m spoolq_client <command>``) runs the same commands.

Modules: :mod:`~spoolq_client.cli.messages` (send, poll, ack, peek, tail),
:mod:`~spoolq_client.cli.queues` (size, purge, move, queues), :mod:`~spoolq_client.cli.queue_settings`
(settings); the flags and errors they share: :mod:`~spoolq_client.cli.connection`; the
``spoolq-client`` command: :mod:`~spoolq_client.cli.dispatch`.
"""

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.dispatch import commands, main

__all__ = ["CliError", "Command", "commands", "main"]
