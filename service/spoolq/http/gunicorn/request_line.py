"""Request lines as long as the SQS query protocol needs by GET, still bounded, refused in the door's format.

AWS takes every SQS action of the query protocol by GET as well as POST, parameters in the query
string; some clients send only GETs (aiosqs). A ``SendMessage`` of a 1 MiB body (SQS's largest
message) percent-encodes to at most 3 MiB (``%XX`` per byte), plus its attributes and the other
parameters: :data:`MAX_REQUEST_LINE` (4 MiB) holds it. gunicorn's own ``limit_request_line`` takes
0 to 8190, where 0 means no limit at all (its C parser then stops at 1 MiB, its Python parser
never); so ``spoolq serve`` sets 0 and the Python parser, and :class:`BoundedRequest` puts the
bound back: a line over 4 MiB is refused with 414 as soon as that much has arrived, and the line is
searched for its end only in what arrived since the last look (no quadratic rescans).

A request refused before the app sees it (414 here; 431 and 400 for bad heads; 408 for a head that
did not arrive in time and 503 over a worker's limits, :mod:`spoolq.http.gunicorn.heads`) is answered
in the format of the door the request line names, as far as it can be told from the line:
an SQS path (``/`` or a queue URL's path) gets the query protocol's ``<ErrorResponse>`` XML, or the
JSON protocol's ``{"__type", "message"}`` when the headers read so far name an ``X-Amz-Target``;
anything else the service's JSON ``{"message": ...}``. :func:`error_answer` builds it; the worker
(:mod:`spoolq.http.gunicorn.worker`) calls :func:`remember_failure` with the exception first.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from xml.sax.saxutils import escape

from gunicorn.http.errors import LimitRequestLine
from gunicorn.http.message import Request

#: the longest request line taken: a 1 MiB SQS message percent-encoded (3 MiB) and room for the rest
MAX_REQUEST_LINE = 4 * 1024 * 1024
#: how much of a refused line is kept to tell its door
_HEAD = 512
_SQS_PATH = re.compile(rb"^[A-Z]+ /(?:[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}/)?(?:[0-9]{12}/[^/?# ]*)?(?:[?# ]|$)")
#: the SQS error code of each status gunicorn refuses with
_SQS_CODES = {414: "RequestURITooLong", 431: "RequestHeaderSectionTooLarge", 400: "InvalidRequest",
              408: "RequestTimeout", 503: "ServiceUnavailable"}


class RequestLineTooLong(LimitRequestLine):  # type: ignore[misc]
    """A request line over :data:`MAX_REQUEST_LINE`, with its first bytes (to tell its door)."""

    def __init__(self, size: int, max_size: int, head: bytes) -> None:
        super().__init__(size, max_size)
        self.head = head


class BoundedRequest(Request):  # type: ignore[misc]
    """gunicorn's request, reading a request line of up to :data:`MAX_REQUEST_LINE` bytes when
    gunicorn's own limit is off (0)."""

    def read_line(self, unreader: Any, buf: bytearray, limit: int = 0) -> tuple[bytes, bytearray]:
        if limit != 0:
            return super().read_line(unreader, buf, limit)  # type: ignore[no-any-return]
        searched = 0
        while True:
            end = buf.find(b"\r\n", max(searched - 1, 0))
            bare = buf.find(b"\n", max(searched - 1, 0), end if end >= 0 else len(buf))
            if bare >= 0:  # a LF before the line's CRLF: gunicorn's own refusal
                return super().read_line(unreader, buf, limit)  # type: ignore[no-any-return]
            if end >= 0:
                if end > MAX_REQUEST_LINE:
                    raise RequestLineTooLong(end, MAX_REQUEST_LINE, bytes(buf[:_HEAD]))
                return bytes(buf[:end]), bytearray(buf[end + 2:])
            if len(buf) - 2 > MAX_REQUEST_LINE:
                raise RequestLineTooLong(len(buf), MAX_REQUEST_LINE, bytes(buf[:_HEAD]))
            searched = len(buf)
            self.read_into(unreader, buf)


_failure = threading.local()


def remember_failure(exc: BaseException | None) -> None:
    """The exception gunicorn is about to answer in this thread (``None``: done)."""
    _failure.exc = exc


def error_answer(status: int, reason: str, mesg: str, head: bytes | None = None) -> tuple[str, bytes]:
    """(content type, body) of the refusal ``status`` in the format of the request's door: from
    ``head`` (the first bytes of the request, when the worker's loop refuses it), else from the
    failure gunicorn is answering in this thread."""
    json_protocol = head is not None and b"\nx-amz-target:" in head.lower()
    if head is None:
        exc = getattr(_failure, "exc", None)
        head = getattr(exc, "head", None)
        req = getattr(exc, "req", None)
        if head is None:
            path = getattr(req, "path", None)
            head = f"{getattr(req, 'method', 'GET')} {path}".encode("latin-1", "replace") if path else None
        headers = getattr(req, "headers", None) or []
        json_protocol = any(name == "X-AMZ-TARGET" for name, _value in headers)
    text = f"HTTP {status} {reason}" + (f": {mesg}" if mesg else "")
    if isinstance(head, bytes) and _SQS_PATH.match(head):
        code = _SQS_CODES.get(status, "InvalidRequest")
        if json_protocol:
            return "application/x-amz-json-1.0", json.dumps({"__type": f"com.amazonaws.sqs#{code}",
                                                             "message": text}).encode()
        body = (f'<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">'
                f"<Error><Type>Sender</Type><Code>{code}</Code><Message>{escape(text)}</Message><Detail/></Error>"
                "<RequestId>00000000-0000-0000-0000-000000000000</RequestId></ErrorResponse>")
        return "text/xml", body.encode()
    return "application/json", json.dumps({"message": text}).encode()


def install() -> None:
    """Make gunicorn's request parser use :class:`BoundedRequest` (in this process: a worker)."""
    from gunicorn.http.parser import RequestParser

    RequestParser.mesg_class = BoundedRequest
