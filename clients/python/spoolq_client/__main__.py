"""``python -m spoolq_client COMMAND ...``: the client commands (:mod:`spoolq_client.cli`)."""

import sys

from spoolq_client.cli.dispatch import main

sys.exit(main(prog="python -m spoolq_client"))
