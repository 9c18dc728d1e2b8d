"""The ``spoolq`` command: the server's commands, and those other installed distributions add.

Server commands (this distribution, :data:`spoolq.cli.dispatch.SERVER_COMMANDS`), one module each:

``spoolq serve``          run the HTTP doors under gunicorn, and the Disque door (:mod:`spoolq.cli.serve`;
                          its sockets: :mod:`spoolq.cli.listen_sockets`)
``spoolq check-config``   validate settings, config file and data directory (:mod:`spoolq.cli.check_config`)
``spoolq backup | restore`` a consistent copy of a live root, and putting one back (:mod:`spoolq.cli.backup`)
``spoolq hash-key``       the digest of an API key for the config file (:mod:`spoolq.cli.hash_key`)

Commands of other distributions, found through the ``spoolq.commands`` entry-point group (as
pytest finds ``pytest11`` plugins and flask ``flask.commands``); this package never imports them:

``spoolq send | poll | ack | peek | size | purge | move | tail | queues | settings``
                          client commands over HTTP, in ``spoolq-client`` (``spoolq_client.cli``;
                          where only that package is installed: ``spoolq-client <command>``)
``spoolq pipeline``       Spark pipelines (audit, requeue, replay), in ``spoolq-spark``

An entry point's name is the command's name and its object has ``name``, ``summary`` (one line
for ``spoolq --help``) and ``main(argv, prog) -> int`` (:class:`spoolq.cli.command.PluginCommand`).
A command that is not installed says in one line which package brings it.
"""

from spoolq.cli.dispatch import main

__all__ = ["main"]
