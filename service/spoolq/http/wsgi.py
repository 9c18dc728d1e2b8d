"""WSGI entry point for running gunicorn directly: ``gunicorn 'spoolq.http.wsgi:application()'``.

Settings come from ``SPOOLQ_*`` environment variables. ``application`` is a factory so
nothing is built at import; gunicorn calls it in each worker.
"""

from __future__ import annotations

from flask import Flask

from spoolq.http.app import create_app
from spoolq.settings.server import load_settings


def application() -> Flask:
    return create_app(load_settings())
