"""Request bodies, read once and whole before any door sees them.

Every door stores exactly the body a client sent, or nothing. So before routing, the app reads
the body of every request that has one (:func:`buffer_body`):

* a declared ``Content-Length`` over ``settings.max_body_bytes`` is 413 before anything is read;
* a ``Transfer-Encoding: chunked`` body is read up to the limit; one byte more is 413 (the
  body is never cut off at the limit and stored truncated);
* bad chunk framing (a size line that is not hex, chunk data without its CRLF, a stream that
  ends inside a chunk) and a body shorter than its ``Content-Length`` are 400;
* the body that was read replaces the WSGI input as a ``Content-Length`` body, so Flask,
  the form parser and the doors read the same bytes, all of them; the doors take the bytes
  themselves with :func:`body_of` (no second read through werkzeug's stream wrappers).

The errors are werkzeug HTTP exceptions; the app renders them in the door's own format
(EmoDB JSON, MQ text, SQS JSON or XML).
"""

from __future__ import annotations

import io
from typing import Any, cast

import flask
from flask import Request, request
from werkzeug.datastructures import Headers
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge
from werkzeug.http import HTTP_STATUS_CODES

try:  # gunicorn's chunked reader raises these for bad framing
    from gunicorn.http.errors import ParseException as _GunicornParseError
except ImportError:  # pragma: no cover - gunicorn is a runtime dependency
    _GunicornParseError = OSError  # type: ignore[misc,assignment]

_READ_SIZE = 64 * 1024
#: the environ key holding the body :func:`buffer_body` read
BODY_KEY = "spoolq.body"
#: environ keys the app's hooks set for each run of a request: when it started (``perf_counter``),
#: its door (``spoolq.http.app.door_of``), and the operation a door names itself (SQS: the action;
#: otherwise the endpoint). Kept in the WSGI environ, not in ``flask.g``: plain dictionary reads
#: on every request.
STARTED_KEY = "spoolq.started"
DOOR_KEY = "spoolq.door"
OPERATION_KEY = "spoolq.operation"


class BodyTooLarge(RequestEntityTooLarge):
    description = "The request body is over the server's limit."


class BadFraming(BadRequest):
    description = "The request body could not be read (bad chunk framing or a short body)."


def _declared_length(environ: dict[str, Any]) -> int | None:
    raw = environ.get("CONTENT_LENGTH")
    if raw in (None, ""):
        return None
    try:
        length = int(raw)
    except ValueError:
        raise BadFraming() from None
    if length < 0:
        raise BadFraming()
    return length


def _chunked(environ: dict[str, Any]) -> bool:
    return "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()


def buffer_body(environ: dict[str, Any], limit: int) -> None:
    """Read the request body whole (or raise 413/400) and hand it on as a Content-Length body."""
    length = _declared_length(environ)
    chunked = _chunked(environ)
    if length is not None and length > limit:
        raise BodyTooLarge()
    if not chunked and not length:
        environ[BODY_KEY] = b""
        return
    stream = environ["wsgi.input"]
    wanted = limit + 1 if length is None or chunked else length
    parts: list[bytes] = []
    got = 0
    try:
        while got < wanted:
            data = stream.read(min(_READ_SIZE, wanted - got))
            if not data:
                break
            parts.append(data)
            got += len(data)
    except (_GunicornParseError, OSError, ValueError):
        raise BadFraming() from None
    if got > limit:
        raise BodyTooLarge()
    if length is not None and not chunked and got != length:
        raise BadFraming()
    body = b"".join(parts)
    environ[BODY_KEY] = body
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    environ["wsgi.input_terminated"] = False


def body_of(environ: dict[str, Any]) -> bytes | None:
    """The body :func:`buffer_body` read for this request (``None``: it did not run)."""
    body = environ.get(BODY_KEY)
    return body if isinstance(body, bytes) else None


def current_request() -> Request:
    """The current request object itself: ``flask.request`` is a proxy that looks the request
    context up again on every attribute read; hooks that read several attributes take it once."""
    return cast(Request, cast(Any, request)._get_current_object())


#: the status line werkzeug makes of each code it knows ("201 CREATED")
_STATUS_LINES = {code: f"{code} {text.upper()}" for code, text in HTTP_STATUS_CODES.items()}


class Response(flask.Response):
    """Flask's response, handed to the WSGI server without werkzeug's general pass when nothing in it
    needs that pass (the app's ``response_class``, and what the doors answer with).

    werkzeug's :meth:`get_wsgi_response` copies the headers, makes a ``Location`` absolute, drops
    the body of a ``HEAD`` request or a 1xx/204/304 answer, sets a ``Content-Length`` it can work
    out, and wraps the body in an iterator that closes the response: about 50,000 instructions per
    request. An answer whose body is held whole as bytes (``Response(b"...")``), whose
    ``Content-Length`` is set, with no ``Location`` or ``Content-Location``, to a request other than
    ``HEAD``, with a status that has a body and nothing to call on close needs none of that: it is
    answered with its status, its headers as they are and the body list, which is what werkzeug's
    pass would hand on for it. Anything else takes werkzeug's pass."""

    @classmethod
    def whole(cls, body: bytes, content_type: str, status: int = 200,
              headers: tuple[tuple[str, str], ...] = ()) -> Response:
        """``Response(body, status, headers, content_type=content_type)``, made without werkzeug's
        general constructor (about 27,000 instructions, most of them checks of values that are
        known good here): the same attributes with the same values. For answers whose parts the
        server writes itself: ``body`` bytes, ``content_type`` and ``headers`` holding no line
        break (a status werkzeug has no name for takes the general constructor)."""
        status_line = _STATUS_LINES.get(status)
        if status_line is None:
            return cls(body, status, list(headers), content_type=content_type)
        answer = cls.__new__(cls)
        answer.headers = Headers()
        answer.headers._list = [*headers, ("Content-Type", content_type), ("Content-Length", str(len(body)))]
        answer._status = status_line
        answer._status_code = status
        answer.direct_passthrough = False
        answer._on_close = []
        answer.response = [body]
        return answer

    def get_wsgi_response(self, environ: dict[str, Any]) -> tuple[Any, str, list[tuple[str, str]]]:
        body = self.response
        status = self.status_code
        if (type(body) is list and not self._on_close and status >= 200 and status != 204 and status != 304
                and environ["REQUEST_METHOD"] != "HEAD" and all(type(part) is bytes for part in body)):
            sized = False
            for key, _value in self.headers:
                lowered = key.lower()
                if lowered == "content-length":
                    sized = True
                elif lowered == "location" or lowered == "content-location":
                    sized = False
                    break
            if sized:
                return body, self.status, list(self.headers)
        return super().get_wsgi_response(environ)


def holds_no_float(value: Any) -> bool:
    """Whether a JSON value read by orjson holds no float anywhere. orjson reads an integer beyond 64
    bits as a float where Python's ``json`` keeps it an integer, so the doors take orjson's value
    only when this holds, and parse a document with floats again the exact way."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is float:
            return False
    return True
