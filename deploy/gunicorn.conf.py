"""gunicorn config for running spoolq with plain ``gunicorn -c deploy/gunicorn.conf.py``.

``spoolq serve`` applies exactly these options itself (``spoolq.http.gunicorn.server.gunicorn_options``),
so prefer it; this file is for setups that must start gunicorn directly. Settings come from
``SPOOLQ_*`` environment variables (SPOOLQ_ROOT, SPOOLQ_PORT, SPOOLQ_HOST, SPOOLQ_WORKERS,
SPOOLQ_THREADS, SPOOLQ_CONFIG, SPOOLQ_FSYNC, SPOOLQ_CERTFILE, SPOOLQ_KEYFILE, ...). Set
PROMETHEUS_MULTIPROC_DIR to an empty directory so /metrics aggregates every worker. (A reload
here is gunicorn's own: it stops the old workers before the new ones serve, and it does not check
the config first: a mistake in it stops the service. `spoolq serve` checks before it reloads.)
"""

from spoolq.access.auth import Authenticator, check_listen_policy
from spoolq.http.gunicorn.server import gunicorn_options, raise_open_file_limit
from spoolq.http.gunicorn.server import on_reload  # noqa: F401  gunicorn's hook by its name: declared queues applied on SIGHUP
from spoolq.settings.server import load_settings

_settings = load_settings()
check_listen_policy(_settings, Authenticator.from_settings(_settings))
raise_open_file_limit()  # as `spoolq serve` does: each waiting long poll is a socket

wsgi_app = "spoolq.http.wsgi:application()"
# every option `spoolq serve` gives gunicorn, under gunicorn's own names (bind, workers, threads,
# worker_class, timeouts, TLS, hooks, ...)
globals().update({_name: _value for _name, _value in gunicorn_options(_settings).items() if _value is not None})
