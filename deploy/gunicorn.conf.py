"""gunicorn config for running spoolq with plain ``gunicorn -c deploy/gunicorn.conf.py``.

``spoolq serve`` applies exactly these options itself (from ``spoolq.http.server``), so
prefer it; this file is for setups that must start gunicorn directly. Settings come from
``SPOOLQ_*`` environment variables (SPOOLQ_ROOT, SPOOLQ_PORT, SPOOLQ_HOST, SPOOLQ_WORKERS,
SPOOLQ_THREADS, SPOOLQ_CONFIG, SPOOLQ_FSYNC, ...). Set PROMETHEUS_MULTIPROC_DIR to an
empty directory so /metrics aggregates every worker.
"""

from spoolq.http.auth import Authenticator, check_listen_policy
from spoolq.http.server import gunicorn_options, raise_open_file_limit
from spoolq.settings import load_settings

_settings = load_settings()
check_listen_policy(_settings, Authenticator.from_settings(_settings))
_options = gunicorn_options(_settings)
raise_open_file_limit()  # as `spoolq serve` does: each waiting long poll is a socket

wsgi_app = "spoolq.http.wsgi:application()"
bind = _options["bind"]
workers = _options["workers"]
threads = _options["threads"]
worker_class = _options["worker_class"]
timeout = _options["timeout"]
graceful_timeout = _options["graceful_timeout"]
keepalive = _options["keepalive"]
worker_connections = _options["worker_connections"]
preload_app = _options["preload_app"]
access_log_format = _options["access_log_format"]
errorlog = _options["errorlog"]
loglevel = _options["loglevel"]
proc_name = _options["proc_name"]
limit_request_line = _options["limit_request_line"]
http_parser = _options["http_parser"]
control_socket_disable = _options["control_socket_disable"]
child_exit = _options["child_exit"]
on_exit = _options["on_exit"]
