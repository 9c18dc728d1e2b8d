"""The web console: ``/console/``, a single page served by the app itself.

* ``GET /console/`` renders ``templates/console.html``; ``/console/static/...`` serves the
  stylesheet and the script (plain JavaScript, no build step, nothing fetched from elsewhere).
  The page routes by URL fragment: ``#/`` the queue list, ``#/queue/<store name>`` a queue,
  ``#/topics`` the SNS topics (:mod:`.topics`), ``#/server`` the node.
* The page reads and acts only through the JSON API of :mod:`.api` (``/console/api/...``),
  sending the key the user typed (kept in the browser's ``sessionStorage``) as ``X-BV-API-Key``.
  The server checks every call; the page disables what the key's permissions (returned with
  each queue) do not allow.
* Rates: the sparklines show the server's history of the last hour (:mod:`spoolq.observability.rates`,
  sampled every five seconds by whichever process of the server comes first, kept in the
  metrics directory), so a page opened now shows the recent past; the figure beside each is
  computed in the browser from the per-queue message totals the list returns
  (``spoolq_queue_messages_total``), refreshed every two seconds.
* ``GET /`` from a browser (``Accept`` prefers ``text/html``) redirects to ``/console/``; any
  other ``GET /`` answers 405 as before, and SQS's ``POST /`` is not touched.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Flask, Response, redirect, render_template, request
from flask_smorest import Api
from werkzeug.exceptions import MethodNotAllowed

from spoolq import __version__
from spoolq.http.console import api as console_api
from spoolq.http.context import Services
from spoolq.observability.rates import RateHistory

HERE = Path(__file__).resolve().parent


def wants_html() -> bool:
    best = request.accept_mimetypes.best_match(["text/html", "application/json", "text/xml"])
    return best == "text/html" and request.accept_mimetypes["text/html"] > 0


def register(app: Flask, api: Api, services: Services) -> None:
    """Register the console page, its assets, its JSON API and the browser redirect of ``/``."""
    pages = Blueprint("console", __name__, url_prefix="/console", template_folder=str(HERE / "templates"),
                      static_folder=str(HERE / "static"), static_url_path="/static")

    @pages.get("/")
    def index() -> Response:
        html = render_template("console.html", version=__version__, node=services.settings.node_id)
        return Response(html, mimetype="text/html", headers={"Cache-Control": "no-store"})

    app.register_blueprint(pages)
    history = RateHistory(services.metrics)
    api.register_blueprint(console_api.create_blueprint(services, history))

    services.on_first_request.append(history.start)  # in the worker, after the fork: see spoolq.observability.rates

    def root() -> Response:
        if wants_html():
            return redirect("/console/", code=302)  # type: ignore[return-value]
        raise MethodNotAllowed(valid_methods=["POST"])

    app.add_url_rule("/", "console_root", root, methods=["GET"])
