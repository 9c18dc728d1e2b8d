"""The client commands: everything the web console does, from the shell (``spoolq send | poll | ack | ...``).

They talk to a running service over HTTP through :class:`spoolq_client.SpoolqClient` and need
neither the server nor its store. Each is a :class:`~spoolq_client.cli.command.Command` in its
module, registered in one place: under its name in this distribution's ``spoolq.commands`` entry
points (``pyproject.toml``), where the server's ``spoolq`` command and ``spoolq-client`` both find it
(:func:`commands`). Where only this package is installed, ``spoolq-client
<command>`` (or ``python -m spoolq_client <command>``) runs the same commands.

Modules: :mod:`~spoolq_client.cli.messages` (send, poll, ack, peek, tail),
:mod:`~spoolq_client.cli.claims` (release, nack, visibility, delete-message),
:mod:`~spoolq_client.cli.queues` (size, purge, move, queues), :mod:`~spoolq_client.cli.create`
(create), :mod:`~spoolq_client.cli.queue_settings` (settings), :mod:`~spoolq_client.cli.manage`
(delete, show, redrive, moves, whoami, node, rates), :mod:`~spoolq_client.cli.completion`
(completion); the flags, errors and queue names they share: :mod:`~spoolq_client.cli.connection`;
the ``spoolq-client`` command: :mod:`~spoolq_client.cli.dispatch`.
"""

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.dispatch import commands, main

__all__ = ["CliError", "Command", "commands", "main"]
