"""``python -m spoolq.cli``: the ``spoolq`` command (gunicorn's in-place upgrade re-executes this)."""

import sys

from spoolq.cli.dispatch import main

sys.exit(main())
