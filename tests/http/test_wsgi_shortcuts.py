"""The app's two shortcuts around werkzeug's per-request work give what werkzeug's own way gives:
the URL adapter made from a request (``_Flask.create_url_adapter``) and the WSGI answer of a
response (``framing.Response.get_wsgi_response``), on ordinary and unusual requests alike."""

from __future__ import annotations

import io
from typing import Any

import flask
import pytest
from flask import Flask
from werkzeug.exceptions import HTTPException
from werkzeug.routing import MapAdapter

from spoolq.http import framing

ADAPTER_FIELDS = ("server_name", "script_name", "subdomain", "url_scheme", "path_info", "default_method",
                  "query_args", "websocket")


def _environ(method: str = "GET", path: str = "/queue/1/q/poll", query: str = "", host: str | None = "127.0.0.1:8000",
             **extra: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""), "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0),
    }
    if host is not None:
        env["HTTP_HOST"] = host
    env.update(extra)
    return env


ENVIRONS = [
    _environ(),
    _environ("POST", "/queue/1/q/send", "delay=1&ttl=5"),
    _environ(host="LocalHost:8000"),
    _environ(host="example.com"),
    _environ(host=None),
    _environ(host="[::1]:8000"),
    _environ("GET", "/queue/1/caf\xc3\xa9/peek", "x=%C3%A9"),  # a UTF-8 path as WSGI hands it on (latin-1)
    _environ("GET", "/mq/\xff\xfe/messages"),  # not UTF-8
    _environ(**{"SCRIPT_NAME": "/prefix"}),
    _environ(**{"SCRIPT_NAME": "/prefix/"}),
    _environ(**{"wsgi.url_scheme": "https"}, host="h:443"),
    _environ(host="a..b"),  # an empty label: werkzeug refuses the Host (400)
    _environ(host="x" * 70 + ".example"),  # a label over 63 characters: refused too
    _environ(host="caf\xc3\xa9.example"),  # not ASCII
    _environ(HTTP_UPGRADE="websocket", HTTP_CONNECTION="Upgrade"),
]


def _adapter_or_error(app: Flask, environ: dict[str, Any], own: bool) -> tuple[Any, ...]:
    request = app.request_class(dict(environ))
    try:
        adapter = app.create_url_adapter(request) if own else Flask.create_url_adapter(app, request)
    except HTTPException as e:
        return ("refused", type(e).__name__, e.code)
    assert isinstance(adapter, MapAdapter)
    return (*[getattr(adapter, f) for f in ADAPTER_FIELDS], adapter.map is app.url_map, request.host)


@pytest.mark.parametrize("environ", ENVIRONS, ids=range(len(ENVIRONS)))
def test_the_url_adapter_is_flasks(app: Flask, environ: dict[str, Any]) -> None:
    flasks = _adapter_or_error(app, environ, own=False)
    assert _adapter_or_error(app, environ, own=True) == flasks
    assert _adapter_or_error(app, environ, own=True) == flasks  # the second time, from the kept name


def test_a_request_matches_the_same_rule(app: Flask) -> None:
    for environ in ENVIRONS[:3]:
        ours = app.create_url_adapter(app.request_class(dict(environ)))
        theirs = Flask.create_url_adapter(app, app.request_class(dict(environ)))
        assert ours is not None and theirs is not None
        assert ours.match(return_rule=True)[0].rule == theirs.match(return_rule=True)[0].rule


def _responses() -> list[tuple[str, dict[str, Any]]]:
    """(method, keyword arguments of a response) pairs: the shortcut's case and every case it leaves
    to werkzeug."""
    plain = {"response": b'{"success":true}', "content_type": "application/json"}
    return [
        ("GET", plain),
        ("POST", {**plain, "status": 201}),
        ("HEAD", plain),
        ("GET", {**plain, "status": 204}),
        ("GET", {**plain, "status": 304, "headers": {"ETag": '"x"'}}),
        ("GET", {**plain, "status": 101}),
        ("GET", {**plain, "status": 302, "headers": {"Location": "/console/"}}),
        ("GET", {**plain, "headers": {"Content-Location": "/caf\xe9"}}),
        ("GET", {"response": ["text", b" and bytes"], "content_type": "text/plain"}),
        ("GET", {"response": iter([b"streamed"]), "content_type": "text/plain"}),
        ("GET", {"response": b"", "status": 200}),
        ("POST", {**plain, "status": 503, "headers": {"Retry-After": "1"}}),
    ]


def _answer(response: flask.Response, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    started: list[tuple[str, list[tuple[str, str]]]] = []
    def start_response(status: str, headers: list[tuple[str, str]], exc: Any = None) -> Any:
        started.append((status, headers))

    body = response(environ, start_response)
    try:
        data = b"".join(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    [(status, headers)] = started
    return status, headers, data


@pytest.mark.parametrize(("method", "kwargs"), _responses(), ids=range(len(_responses())))
def test_the_wsgi_answer_is_werkzeugs(app: Flask, method: str, kwargs: dict[str, Any]) -> None:
    environ = _environ(method, "/queue/1/q/send")
    with app.test_request_context(environ_base=environ, method=method):
        ours = _answer(framing.Response(**{**kwargs, "response": _again(kwargs["response"])}), dict(environ))
        theirs = _answer(flask.Response(**{**kwargs, "response": _again(kwargs["response"])}), dict(environ))
    assert ours == theirs


def _again(body: Any) -> Any:
    return iter([b"streamed"]) if not isinstance(body, (bytes, list)) else body


def test_what_is_called_on_close_is_called(app: Flask) -> None:
    closed: list[bool] = []
    response = framing.Response(b"x")
    response.call_on_close(lambda: closed.append(True))
    _answer(response, _environ())
    assert closed == [True]


def test_the_app_answers_with_it(app: Flask) -> None:
    assert app.response_class is framing.Response
    with app.test_request_context("/queue/1/q/size"):
        assert isinstance(app.make_response(("x", 200)), framing.Response)


@pytest.mark.parametrize(("body", "content_type", "status", "headers"), [
    (b'{"success":true}', "application/json", 200, ()),
    (b"", "text/plain; charset=utf-8", 201, (("X-Message-Id", "ab" * 20),)),
    (b"x" * 70_000, "application/x-amz-json-1.0", 200, (("x-amzn-RequestId", "r"), ("X-Other", "o"))),
    (b"no such queue\n", "text/plain; charset=utf-8", 404, ()),
    (b"{}", "application/json", 299, ()),  # a code werkzeug has no name for
])
def test_a_whole_response_is_the_constructors(body: bytes, content_type: str, status: int,
                                             headers: tuple[tuple[str, str], ...]) -> None:
    quick = framing.Response.whole(body, content_type, status, headers)
    made = framing.Response(body, status, list(headers), content_type=content_type)
    assert type(quick) is type(made) and vars(quick) == vars(made)
    assert _answer(quick, _environ("POST")) == _answer(made, _environ("POST"))


@pytest.mark.parametrize("query", ["", "limit=10&ttl=60", "a=1&a=2&b=&c", "wait=&meta=true&partitioned=false",
                                   "x=%C3%A9&y=%zz&z=a+b", "limit=1;ttl=2", "&&=&limit"])
def test_query_parameters_read_as_werkzeug_reads_them(query: str) -> None:
    """The EmoDB door asks werkzeug's ``args`` only for a parameter the query has (a missing one
    costs ``MultiDict.get`` a BadRequestKeyError): the same value, or ``None``, as ``args.get``."""
    from spoolq.http.emodb.wire import _given

    args = flask.Request(_environ(query=query)).args
    for name in ["limit", "ttl", "wait", "meta", "partitioned", "a", "b", "c", "x", "y", "z", "", "missing"]:
        assert _given(args, name) == args.get(name)
