"""The Flask application factory: ``create_app(settings, store=None)``.

Nothing is built at import. ``create_app`` wires, for one app:

* the EmoDB doors ``/queue/1`` and ``/dedupq/1`` (:mod:`spoolq.http.emodb`), the MQ door
  ``/mq`` (:mod:`spoolq.http.mq`), the SQS door (``POST /``, :mod:`spoolq.http.sqs`) and the SNS
  door on the same ``/`` (:mod:`spoolq.http.sns`: the first hook hands it SNS's requests), side by
  side over the same :class:`~spoolq.http.context.Services`;
* ``/healthz`` (liveness: the process serves; never touches the disk), ``/readyz``
  (readiness: the store is writable, has room for the largest message, warns when its space runs
  low, and a group-commit flush completes: :mod:`spoolq.readiness`; and whether the last reload
  of the config was applied: :mod:`spoolq.http.reload_state`), ``/metrics``
  (Prometheus: :mod:`spoolq.metrics`, per-queue gauges from :mod:`spoolq.http.overview`),
  the OpenAPI document at ``/docs/openapi.json`` and interactive docs at ``/docs/``;
* the web console at ``/console/`` (:mod:`spoolq.http.console`); ``GET /`` from a browser
  (``Accept: text/html``) redirects there, while SQS's ``POST /`` is untouched;
* one error renderer per door: EmoDB errors exactly as EmoDB renders them, MQ errors as
  text, SQS errors in the SQS protocol's shape (JSON or XML), everything else as JSON
  ``{"message": ...}``; never an HTML page, a redirect page or a stack trace;
* request bodies (:mod:`spoolq.http.framing`): read whole before any view, 413 over
  ``settings.max_body_bytes`` however framed (a declared ``Content-Length`` over it before
  reading), 400 for bad chunk framing or a short body;
* no slash merging or trailing-slash redirects: ``/queue/1//q/peek`` is a 404 in the door's
  format, not a 308 page; a body-less answer (204, OPTIONS) carries no ``Content-Type``;
* one hook before the views and one after, nothing else per request: the first names the
  request's door (:func:`door_of`) for the store's message counts (:mod:`spoolq.counting`) and
  reads the body; the last forgets the door and observes the request once (:mod:`spoolq.metrics`).

The store is opened lazily on first use (post-fork under gunicorn) unless one is passed in.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from types import FunctionType
from typing import Any

import swagger_ui_bundle  # type: ignore[import-untyped]
from flask import Flask, Request, Response, abort, request, send_from_directory
from flask.sessions import NullSession, SecureCookieSessionInterface
from flask_smorest import Api, Blueprint
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed
from werkzeug.routing import MapAdapter
from werkzeug.wsgi import get_host

from spoolq import __version__
from spoolq.auth import Authenticator
from spoolq.counting import name_door
from spoolq.http import apidoc, console, emodb, framing, mq, parking, sns, sqs
from spoolq.http import schemas as s
from spoolq.http.context import Services
from spoolq.http.emodb import wire as emodb_wire
from spoolq.http.overview import StoreCollector
from spoolq.http.reload_state import ReloadState, ReloadStateCollector
from spoolq.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from spoolq.metrics import Metrics
from spoolq.server_settings import Settings
from spoolq.store.contract import QueueStore
from spoolq.store.root_format import FORMAT as DATA_FORMAT

log = logging.getLogger("spoolq.http")
#: what /healthz and /readyz say of the code: its version and the on-disk format it writes
VERSION = {"version": __version__, "format": DATA_FORMAT}


class _Api(Api):  # type: ignore[misc]
    """flask-smorest's Api without its generic extras: every status an operation answers with is
    documented explicitly, so the contract holds no unused Error / pagination components."""

    DEFAULT_ERROR_RESPONSE_NAME = None

    def _register_responses(self) -> None:
        pass

    def _register_pagination_header(self) -> None:
        pass


class _NoSessions(SecureCookieSessionInterface):
    """spoolq keeps no Flask session (no cookies are read or set): every request gets the same
    read-only null session instead of Flask working out, per request, that it has no secret key."""

    _null = NullSession()

    def open_session(self, app: Flask, request: Request) -> NullSession:
        return self._null


#: how many Host headers :meth:`_Flask.create_url_adapter` keeps the checked server name of
_SERVER_NAMES_KEPT = 64


class _Flask(Flask):
    """Flask with ``ensure_sync``'s answer kept per function: Flask asks it of the view and of every
    hook on every request (``inspect`` calls each time), and the answer never changes; with
    :class:`_NoSessions`; with the URL adapter of a request made from its Host's checked server name
    (:meth:`create_url_adapter`); and with :class:`~spoolq.http.framing.Response`."""

    session_interface = _NoSessions()
    response_class = framing.Response

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sync: dict[Any, Callable[..., Any]] = {}
        self._server_names: dict[tuple[str, str], str] = {}

    def create_url_adapter(self, request: Request | None) -> MapAdapter | None:
        """The adapter Flask binds for ``request``, made with less work. Flask's reads the Host twice,
        checks the Host's name against IDNA (a codec written in Python) and decodes the path, script
        name and query through werkzeug's ``bind_to_environ``: about 50,000 instructions per request.
        Here the Host is read once, the name ``Map.bind`` makes of a Host and scheme is kept (a few
        dozen of them; a Host it refuses is refused by ``Map.bind`` again each time), and the same
        adapter is made with the same values. Settings this shortcut does not cover (trusted hosts,
        ``SERVER_NAME``, subdomain or host matching, a WebSocket upgrade) take Flask's own way."""
        if (request is None or self.subdomain_matching or self.url_map.host_matching
                or self.config["TRUSTED_HOSTS"] is not None or self.config["SERVER_NAME"] is not None
                or "HTTP_UPGRADE" in request.environ):
            return super().create_url_adapter(request)
        environ = request.environ
        request.host = host = get_host(environ)  # what Flask sets too
        scheme = environ["wsgi.url_scheme"]
        subdomain = self.url_map.default_subdomain or ""
        script_name, path_info, query = (_wsgi_text(environ.get(key))
                                         for key in ("SCRIPT_NAME", "PATH_INFO", "QUERY_STRING"))
        server_name = self._server_names.get((host, scheme))
        if server_name is None:
            adapter = self.url_map.bind(host.lower(), script_name, subdomain, scheme, environ["REQUEST_METHOD"],
                                        path_info, query)  # werkzeug.exceptions.BadHost, as Flask's own
            if len(self._server_names) >= _SERVER_NAMES_KEPT:
                self._server_names.clear()
            self._server_names[(host, scheme)] = adapter.server_name
            return adapter
        return MapAdapter(self.url_map, server_name, "/" if script_name is None else script_name, subdomain,
                          scheme, "/" if path_info is None else path_info, environ["REQUEST_METHOD"], query)

    def make_default_options_response(self) -> Response:
        """``OPTIONS`` lists the methods of the route the path matched (``/queue/1/_move``: POST), not of
        every route the path could also match (``/queue/1/<queue>`` would add DELETE, which the
        matched route does not serve)."""
        matched = request.url_rule
        if matched is None:
            return super().make_default_options_response()
        methods: set[str] = set()
        for rule in self.url_map.iter_rules():
            if rule.rule == matched.rule and rule.methods:
                methods |= rule.methods
        answer = self.response_class()
        answer.allow.update(methods)
        return answer

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        if type(func) is not FunctionType:  # bound methods and the like: new objects each time
            return super().ensure_sync(func)
        sync = self._sync.get(func)
        if sync is None:
            if len(self._sync) >= 1024:  # per-request closures (after_this_request): never kept long
                self._sync.clear()
            sync = self._sync[func] = super().ensure_sync(func)
        return sync


def _wsgi_text(value: str | None) -> str | None:
    """A WSGI environ string as werkzeug's ``bind_to_environ`` reads it (its bytes as UTF-8)."""
    return None if value is None else value.encode("latin1").decode(errors="replace")


def door_of(path: str) -> str:
    """Which front door a request path belongs to (error rendering and metric labels)."""
    if path.startswith("/queue/1/") or path == "/queue/1":
        return "queue"
    if path.startswith("/dedupq/1/") or path == "/dedupq/1":
        return "dedupq"
    if path.startswith("/mq/") or path == "/mq":
        return "mq"
    if is_sqs_path(path):
        return "sqs"
    return "service"


_SQS_QUEUE_PATH = re.compile(r"^/(?:[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}/)?[0-9]{12}/[^/]*$")


def is_sqs_path(path: str) -> bool:
    """Whether a path is the SQS door's: ``/`` or a queue URL path ``[/<region>]/<12-digit account>/<name>``."""
    return path == "/" or bool(_SQS_QUEUE_PATH.match(path))


def create_app(settings: Settings, store: QueueStore | None = None) -> Flask:
    """A ready-to-serve WSGI app for ``settings`` (the store is opened on first use)."""
    app = _Flask("spoolq")
    # Routing never redirects (a redirect is an HTML page): "//" and a trailing "/" are plain 404s.
    app.url_map.merge_slashes = False
    app.url_map.strict_slashes = False
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        API_TITLE="spoolq",
        API_VERSION=__version__,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/docs",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/",
        OPENAPI_SWAGGER_UI_URL="/docs/assets/",
        JSON_SORT_KEYS=False,
    )
    metrics = Metrics()
    metrics.long_poll_doors("queue", "dedupq", "mq", "sqs")
    services = Services(settings, Authenticator.from_settings(settings), metrics, store)
    services.metrics.scrape_collectors += [StoreCollector(services.overview), ReloadStateCollector()]
    app.extensions["spoolq"] = services

    api = _Api(app, spec_kwargs={"info": {
        "description": "spoolq: a durable file-per-message queue. EmoDB QueueService/DedupQueueService, "
                       "MQ and SQS front doors over one store. Where a door differs from the system it imitates "
                       "is listed in the compatibility notes of the spoolq documentation. A request line over "
                       "4 MiB is answered 414 before any operation sees it."}})
    api.ma_plugin.converter.add_attribute_function(apidoc.null_means_null)
    for name, scheme in apidoc.SECURITY_SCHEMES.items():
        api.spec.components.security_scheme(name, scheme)
    api.register_blueprint(emodb.create_blueprint(services, dedup=False))
    api.register_blueprint(emodb.create_blueprint(services, dedup=True))
    api.register_blueprint(mq.create_blueprint(services))
    api.register_blueprint(_ops_blueprint(services))
    sqs_blueprint = sqs.create_blueprint(services)
    app.register_blueprint(sqs_blueprint)
    sns_door, sns_blueprint = sns.create_door(services)
    app.register_blueprint(sns_blueprint)
    console.register(app, api, services)

    assets = swagger_ui_bundle.swagger_ui_path

    @app.get("/docs/assets/<path:filename>")
    def docs_assets(filename: str) -> Response:
        return send_from_directory(assets, filename, max_age=86400)

    _install_hooks(app, services, sqs_blueprint.answer_get_root, sns_door.answer)
    _install_error_handlers(app)
    return app


def _ops_blueprint(services: Services) -> Blueprint:
    blp = Blueprint("ops", __name__, description="Health and metrics")

    def healthz() -> Response:
        body = s.HealthSchema().dumps({"status": "ok", **VERSION, "store": services.live()})
        return Response(body, status=200, mimetype="application/json")

    def readyz() -> Response:
        ready, details = services.ready()
        status = "unavailable" if not ready else "warning" if details.get("warning") else "ok"
        answer: dict[str, Any] = {"status": status, **VERSION, "store": details}
        reload_state = ReloadState.read()  # a failed reload leaves the node ready: it serves as before
        if reload_state is not None:
            answer["config"] = reload_state.details()
        body = s.HealthSchema().dumps(answer)
        return Response(body, status=200 if ready else 503, mimetype="application/json")

    def metrics() -> Response:
        # content_type, not mimetype: Flask would append a second charset to a text/* mimetype
        return Response(services.metrics.render(), content_type=METRICS_CONTENT_TYPE)

    health_doc = blp.doc(operationId="healthz", summary="Liveness: the process serves HTTP", responses={
        "200": {"description": "the process serves (says nothing about the disk: see /readyz)",
                "content": apidoc.json_content(s.HealthSchema)}})
    ready_doc = blp.doc(operationId="readyz", summary="Readiness: the store can accept work now", responses={
        "200": {"description": "ready: the root is writable, has room for the largest message, and a flush "
                               "completes; status \"warning\" when its free space or inodes are low",
                "content": apidoc.json_content(s.HealthSchema)},
        "503": {"description": "not ready (the store cannot be opened or written, has no room for a message of "
                               "the largest accepted size, or a flush hangs)",
                "content": apidoc.json_content(s.HealthSchema)}})
    metrics_doc = blp.doc(operationId="metrics", summary="Prometheus metrics", responses={
        "200": {"description": "text exposition format", "content": {"text/plain": {"schema": s.TEXT}}}})
    blp.route("/healthz", methods=["GET"])(health_doc(healthz))
    blp.route("/readyz", methods=["GET"])(ready_doc(readyz))
    blp.route("/metrics", methods=["GET"])(metrics_doc(metrics))

    return blp


def _install_hooks(app: Flask, services: Services, answer_get_root: Callable[[], Response | None],
                   answer_sns: Callable[[Request], Response | None]) -> None:
    """The app's only two hooks: ``start`` before every other (the request's start time and
    door, the body read whole, what starts with the first request, SNS's requests to ``/`` and
    SQS's ``GET /?Action=``),
    and ``observe`` after the view (the door forgotten, the request observed once)."""
    start = _start_hook(services, _own_routes(app), answer_get_root, answer_sns)
    # first of all hooks (flask-smorest registers none of its own)
    app.before_request_funcs.setdefault(None, []).insert(0, start)
    app.after_request(_observe_hook(services.metrics))


def _own_routes(app: Flask) -> dict[str, set[str]]:
    """The paths that are their own route, with the methods of those routes.

    Such a path (/queue/1/_move) never falls through to a route with a variable (/queue/1/<queue>):
    a method the path's own route lacks is a 405 with its Allow."""
    own_routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if not rule.arguments and rule.methods:
            own_routes.setdefault(rule.rule, set()).update(rule.methods)
    return own_routes


def _start_hook(services: Services, own_routes: dict[str, set[str]], answer_get_root: Callable[[], Response | None],
                answer_sns: Callable[[Request], Response | None]) -> Callable[[], Response | None]:
    """The hook before every other: see :func:`_install_hooks`."""
    limit = services.settings.max_body_bytes
    first_request = services.on_first_request

    def start() -> Response | None:
        req = framing.current_request()  # one context lookup, not one per attribute
        path = req.path
        own = own_routes.get(path)
        if own is not None and req.url_rule is not None and req.url_rule.rule != path:
            raise MethodNotAllowed(valid_methods=sorted(own))
        environ = req.environ
        environ[framing.STARTED_KEY] = time.perf_counter()
        environ[framing.DOOR_KEY] = door = door_of(path)
        name_door(door)
        environ.pop(framing.OPERATION_KEY, None)
        if first_request:
            starting = list(first_request)
            first_request.clear()
            for begin in starting:
                begin()
        framing.buffer_body(environ, limit)
        if path == "/":
            answer = answer_sns(req)  # SNS shares "/" with SQS: the SNS door takes what is its own
            if answer is None and environ["REQUEST_METHOD"] == "GET":  # the SQS Query protocol's GET form
                answer = answer_get_root()
            return answer
        return None
    return start


def _observe_hook(metrics: Metrics) -> Callable[[Response], Response]:
    """The hook after the view: see :func:`_install_hooks`."""

    def observe(response: Response) -> Response:
        # the store calls of this request are over: whatever this thread calls next is nobody's
        # (Flask runs this hook after a view's error is rendered too)
        name_door(None)
        req = framing.current_request()
        response = _never_html(response, req)
        environ = req.environ
        started = environ.get(framing.STARTED_KEY)
        slot = parking.of(environ)
        if slot is not None:  # a long poll is observed once, when answered, from its first run
            if slot.started is None:
                slot.started = started
            started = None if slot.parked else slot.started
        if started is not None or (slot is not None and slot.started is not None):
            # a door may name the operation itself (SQS: the action)
            operation = environ.get(framing.OPERATION_KEY) or (req.endpoint or "unmatched").rsplit(".", 1)[-1]
            door, status = environ.get(framing.DOOR_KEY) or door_of(req.path), response.status_code
            if started is not None:
                metrics.observe(door, operation, status, time.perf_counter() - started)
            else:  # parked: observed if the kept empty answer is sent at the deadline
                assert slot is not None and slot.started is not None
                first = slot.started
                slot.on_expiry = lambda: metrics.observe(door, operation, status, time.perf_counter() - first)
        return response
    return observe


def _never_html(response: Response, req: Request) -> Response:
    """Whatever produced ``response``, it is not an HTML page (the interactive docs excepted)."""
    if response.mimetype != "text/html" or req.path.startswith("/docs/"):
        return response
    if response.status_code >= 400:
        # An HTTPException rendered by werkzeug's default page (e.g. returned by another
        # blueprint's error handler for a path that is ours): re-render it in our format.
        return _render_error(_status_exception(response.status_code))
    if response.status_code >= 300 or not response.content_length:
        # a body-less answer (204, OPTIONS, a redirect that should not exist) has no content type
        response.set_data(b"")
        del response.headers["Content-Type"]
        if response.status_code in (204, 304):
            del response.headers["Content-Length"]
    return response


def _status_exception(status: int) -> HTTPException:
    try:
        abort(status)
    except HTTPException as e:
        return e
    return InternalServerError()  # pragma: no cover - abort always raises


def _render_error(exc: BaseException) -> Response:
    """The rendering of ``exc`` for the door the current request belongs to."""
    door = door_of(request.path)
    if is_sqs_path(request.path):
        from spoolq.http.sqs.wire import render_http_error

        if not isinstance(exc, HTTPException):
            log.error("unexpected error on %s %s", request.method, request.path, exc_info=exc)
        return render_http_error(exc, request)
    if door == "mq":
        if not isinstance(exc, HTTPException | mq.MqError) and not hasattr(exc, "http_status"):
            log.exception("unexpected error on %s %s", request.method, request.path)
        return mq.render_error(exc)
    err, log_id = emodb_wire.render(exc)
    if log_id is not None:
        log.error("unexpected error (ID %s) on %s %s", log_id, request.method, request.path, exc_info=exc)
    return Response(err.body, status=err.status, content_type=err.content_type, headers=err.headers)


def _install_error_handlers(app: Flask) -> None:
    # Registered after flask-smorest's own HTTPException handler, so these win.
    app.register_error_handler(HTTPException, _render_error)
    app.register_error_handler(Exception, _render_error)
