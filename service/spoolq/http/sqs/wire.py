"""The two SQS wire protocols: parsing requests, rendering replies and errors.

JSON (awsJson1_0, every botocore since 1.34.90)
    ``POST /`` with ``X-Amz-Target: AmazonSQS.<Action>`` and a JSON object body.
    Replies are ``application/x-amz-json-1.0`` JSON objects; operations without
    output answer ``{}``. Errors answer ``{"__type": "com.amazonaws.sqs#<Shape>",
    "message": ...}`` plus ``x-amzn-query-error: <LegacyCode>;<Sender|Receiver>`` so
    botocore raises the modelled exception class *and* reports the legacy code.

Query (older SDKs)
    ``application/x-www-form-urlencoded`` with ``Action=<Action>``, sent to ``/`` or to
    the queue URL's path, or the same parameters in the query string of a ``GET`` (or a
    ``POST``) as AWS accepts them. Flattened members (``Attribute.1.Name``,
    ``SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue``, ...)
    are folded into the JSON protocol's shapes by :func:`parse_query`, so handlers
    see one request shape. Replies are ``<ActionResponse><ActionResult>`` XML in
    the 2012-11-05 namespace; errors are ``<ErrorResponse>`` with the legacy code. A Query
    request whose ``Accept`` prefers ``application/json`` gets the same reply as JSON,
    ``{"<Action>Response": {"<Action>Result": {...}, "ResponseMetadata": {...}}}``, as AWS
    negotiates it (ReceiveMessage's list is ``messages`` there). An empty list arrives as the
    bare member (``AttributeName=`` or ``MessageAttributeNames=``), as botocore sends one.

Every reply, errors included, carries a fresh request id in ``x-amzn-RequestId``.

The protocol is chosen by ``X-Amz-Target`` (JSON) or ``Content-Type`` (form → Query).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

import orjson
from flask import Request
from werkzeug.exceptions import HTTPException

from spoolq.errors import SpoolqError
from spoolq.http import framing
from spoolq.http.framing import Response
from spoolq.http.sqs.errors import (
    InternalError,
    InvalidAction,
    InvalidParameterValue,
    MalformedRequest,
    MethodNotAllowed,
    RequestEntityTooLarge,
    sqs_fault,
    sqs_message,
)

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
XML_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
TARGET_PREFIX = "AmazonSQS."

#: Query members that are flattened lists (``AttributeName.1``) and their JSON names.
_QUERY_LISTS = {
    "AttributeName": "AttributeNames",
    "MessageAttributeName": "MessageAttributeNames",
    "MessageSystemAttributeName": "MessageSystemAttributeNames",
    "TagKey": "TagKeys",
    "AWSAccountId": "AWSAccountIds",
    "ActionName": "Actions",
}
_QUERY_LIST_NAMES = frozenset(_QUERY_LISTS.values())

#: members a Query reply negotiated to JSON names otherwise (recorded: ReceiveMessage's
#: ``ReceiveMessageResult.messages[0].Body``, test_marker_serialization_json_protocol)
_JSON_REPLY_NAMES = {"Messages": "messages"}
#: Query members that are flattened maps: query name -> (JSON name, key field, value field).
_QUERY_MAPS = {
    "Attribute": ("Attributes", "Name", "Value"),
    "Tag": ("Tags", "Key", "Value"),
    "MessageAttribute": ("MessageAttributes", "Name", "Value"),
    "MessageSystemAttribute": ("MessageSystemAttributes", "Name", "Value"),
}
_QUERY_INTS = frozenset({"MaxNumberOfMessages", "VisibilityTimeout", "WaitTimeSeconds", "DelaySeconds",
                         "MaxResults", "MaxNumberOfMessagesPerSecond"})
#: Reply members rendered as repeated XML elements, and the element name of one item.
_XML_LISTS = {
    "QueueUrls": "QueueUrl",
    "queueUrls": "QueueUrl",
    "Messages": "Message",
    "Failed": "BatchResultErrorEntry",
    "Results": "ListMessageMoveTasksResultEntry",
}
_XML_MAPS = {"Attributes": ("Attribute", "Name", "Value"), "Tags": ("Tag", "Key", "Value"),
             "MessageAttributes": ("MessageAttribute", "Name", "Value")}


@dataclass(frozen=True)
class SqsRequest:
    """One parsed SQS call, whatever protocol it came in."""

    action: str
    params: Mapping[str, Any]
    protocol: str  # "json" or "query"
    request_id: str
    #: a Query request whose client asked for JSON (``Accept: application/json``)
    json_reply: bool = False


def uuid4_text(digits: str) -> str:
    """``str(uuid.UUID(bytes=bytes.fromhex(digits[:32]), version=4))``: the version 4 in the high
    digit of byte 6 and the RFC 4122 variant in the two high bits of byte 8, written from the hex
    digits directly (no UUID object, no int, no bytearray)."""
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{_VARIANT[digits[16]]}{digits[17:20]}-{digits[20:32]}"


#: a UUID's variant digit (``10`` in its two high bits) for each hex digit of the same place
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def new_request_id() -> str:
    """A random UUID, as ``str(uuid.uuid4())`` makes it."""
    return uuid4_text(os.urandom(16).hex())


def _load_json(raw: bytes) -> Any:
    """``json.loads(raw)``, read by orjson where that gives the same value: a document orjson
    reads (strict JSON in UTF-8) without floats (orjson reads an integer beyond 64 bits as a float,
    json.loads as an integer). Anything else, errors included, is read by json.loads."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)
    return value if framing.holds_no_float(value) else json.loads(raw)


#: the JSON protocol's replies: compact, ASCII (as ``json.dumps(..., separators=(",", ":"))``), one
#: encoder for every reply
_REPLY_JSON = json.JSONEncoder(separators=(",", ":"))

#: actions whose replies hold no float (strings, booleans, lists and objects): orjson writes those
#: as ``_REPLY_JSON`` does but for the characters beyond printable ASCII (which it writes as they
#: are where the encoder escapes them), so its output is taken only when it holds none of them
#: (a ReceiveMessage whose bodies are not all ASCII is written by the encoder)
_PLAIN_REPLIES = frozenset({"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage",
                            "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"})


def reply_json(action: str, result: Mapping[str, Any]) -> bytes:
    """The JSON protocol's body of ``action``'s reply ``result``: ``_REPLY_JSON``'s encoding, made
    by orjson where that gives the same bytes."""
    if action in _PLAIN_REPLIES:
        try:
            body = orjson.dumps(result)
        except orjson.JSONEncodeError:  # a key that is not a string, an integer beyond 64 bits
            pass
        else:
            if body.isascii() and b"\x7f" not in body:
                return body
    return _REPLY_JSON.encode(result).encode()


def parse_request(request: Request, request_id: str | None = None) -> SqsRequest:
    """Parse a Flask request into an :class:`SqsRequest` (JSON or Query)."""
    request_id = request_id or new_request_id()
    target = request.environ.get("HTTP_X_AMZ_TARGET")  # the X-Amz-Target header, as werkzeug's headers read it
    if target is not None:
        if not target.startswith(TARGET_PREFIX):
            raise InvalidAction(f"Unknown target {target!r}")
        raw = framing.body_of(request.environ)
        if raw is None:
            raw = request.get_data(cache=True)
        try:
            params = _load_json(raw) if raw.strip() else {}
        except ValueError as exc:
            raise InvalidParameterValue(f"The request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise InvalidParameterValue("The request body is nested too deeply.") from None
        if not isinstance(params, dict):
            raise InvalidParameterValue("The request body must be a JSON object.")
        return SqsRequest(target[len(TARGET_PREFIX):], params, "json", request_id)
    form = request.form.to_dict(flat=True) if request.mimetype == "application/x-www-form-urlencoded" else {}
    merged = {**request.args.to_dict(flat=True), **form}
    action = merged.pop("Action", "")
    if not action:
        raise InvalidAction("The request must contain X-Amz-Target or the parameter Action.")
    merged.pop("Version", None)
    for auth_param in ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
                       "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"):
        merged.pop(auth_param, None)
    params = parse_query(merged)
    json_reply = request.accept_mimetypes.best_match(["text/xml", "application/json"]) == "application/json"
    return SqsRequest(action, params, "query", request_id, json_reply)


def _set_path(tree: dict[str, Any], parts: list[str], value: str) -> None:
    node = tree
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _indexed(node: Mapping[str, Any]) -> list[Any]:
    items = [(int(k), v) for k, v in node.items() if k.isdigit()]
    return [v for _, v in sorted(items)]


def _fold(tree: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key in _QUERY_LISTS and isinstance(value, dict):
            out[_QUERY_LISTS[key]] = _indexed(value)
        elif (key in _QUERY_LISTS or key in _QUERY_LIST_NAMES) and value == "":
            out[_QUERY_LISTS.get(key, key)] = []  # an empty list, as botocore sends one (``AttributeName=``)
        elif key in _QUERY_MAPS and isinstance(value, dict):
            json_name, key_field, value_field = _QUERY_MAPS[key]
            folded: dict[str, Any] = {}
            for item in _indexed(value):
                if isinstance(item, dict) and key_field in item:
                    inner = item.get(value_field, "")
                    folded[item[key_field]] = _fold(inner) if isinstance(inner, dict) else inner
            out[json_name] = folded
        elif key.endswith("BatchRequestEntry") and isinstance(value, dict):
            out["Entries"] = [_fold(item) if isinstance(item, dict) else item for item in _indexed(value)]
        elif key == "Entries" or (key.endswith("BatchRequestEntry") and value == ""):
            out["Entries"] = [] if value == "" else value  # an empty list, as botocore sends one
        elif key in _QUERY_INTS and isinstance(value, str):
            try:
                out[key] = int(value)
            except ValueError:
                out[key] = value
        else:
            out[key] = _fold(value) if isinstance(value, dict) else value
    return out


#: The deepest flattened Query member of the 2012-11-05 model has 7 parts
#: (``SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1``).
MAX_QUERY_DEPTH = 12


def parse_query(flat: Mapping[str, str]) -> dict[str, Any]:
    """Fold flattened Query parameters into the JSON protocol's request shape."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        if len(parts) > MAX_QUERY_DEPTH:
            raise InvalidParameterValue(f"The parameter name {key[:80]!r}... is nested too deeply.")
        _set_path(tree, parts, value)
    return _fold(tree)


#: beyond &, < and >: a raw CR would reach the client as LF (XML end-of-line handling)
_XML_ENTITIES = {"\r": "&#xD;"}


def _xml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return escape(str(value), _XML_ENTITIES)


def _xml(name: str, value: Any, action: str) -> str:
    if name in _XML_MAPS and isinstance(value, Mapping):
        item, key_name, value_name = _XML_MAPS[name]
        return "".join(f"<{item}><{key_name}>{_xml_value(k)}</{key_name}>{_xml(value_name, v, action)}</{item}>"
                       for k, v in value.items())
    if isinstance(value, list):
        item = _XML_LISTS.get(name, f"{action}ResultEntry" if name == "Successful" else name)
        return "".join(_xml(item, v, action) for v in value)
    if isinstance(value, Mapping):
        return f"<{name}>{''.join(_xml(k, v, action) for k, v in value.items())}</{name}>"
    return f"<{name}>{_xml_value(value)}</{name}>"


def render(req: SqsRequest, result: Mapping[str, Any]) -> Response:
    """A success reply in the request's protocol."""
    if req.protocol == "json":  # the request id is a UUID made here: nothing in it to check
        return Response.whole(reply_json(req.action, result), JSON_CONTENT_TYPE, 200,
                              (("x-amzn-RequestId", req.request_id),))
    headers = {"x-amzn-RequestId": req.request_id}
    if req.json_reply:
        result = {_JSON_REPLY_NAMES.get(k, k): v for k, v in result.items()}
        doc = {f"{req.action}Response": {f"{req.action}Result": result or None,
                                         "ResponseMetadata": {"RequestId": req.request_id}}}
        return Response(_REPLY_JSON.encode(doc), 200, headers, mimetype="application/json")
    body = "".join(_xml(k, v, req.action) for k, v in result.items())
    # an empty result is an empty element, as AWS writes it (``<ReceiveMessageResult/>``)
    result_xml = f"<{req.action}Result>{body}</{req.action}Result>" if body else f"<{req.action}Result/>"
    xml = (f'<?xml version="1.0"?><{req.action}Response xmlns="{XML_NAMESPACE}">'
           f"{result_xml}"
           f"<ResponseMetadata><RequestId>{req.request_id}</RequestId></ResponseMetadata>"
           f"</{req.action}Response>")
    return Response(xml, 200, headers, mimetype="text/xml")


def render_error(exc: SpoolqError, protocol: str, request_id: str) -> Response:
    """The one place an error becomes an SQS reply."""
    message = sqs_message(exc, protocol)
    fault = sqs_fault(exc)
    request_id = request_id or new_request_id()
    headers = {"x-amzn-RequestId": request_id, "x-amzn-query-error": f"{exc.sqs_query_code};{fault}"}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if protocol == "json":
        shape = exc.sqs_type if "#" in exc.sqs_type else f"com.amazonaws.sqs#{exc.sqs_type}"
        body = json.dumps({"__type": shape, "message": message})
        return Response(body, exc.sqs_status, headers, mimetype=JSON_CONTENT_TYPE)
    xml = (f'<?xml version="1.0"?><ErrorResponse xmlns="{XML_NAMESPACE}"><Error><Type>{fault}</Type>'
           f"<Code>{escape(exc.sqs_query_code)}</Code><Message>{escape(message)}</Message><Detail/></Error>"
           f"<RequestId>{request_id}</RequestId></ErrorResponse>")
    return Response(xml, exc.sqs_status, headers, mimetype="text/xml")


def sqs_error_of(exc: BaseException) -> SpoolqError:
    """The SQS error a non-SQS exception (werkzeug HTTP errors, bugs) is rendered as."""
    if isinstance(exc, SpoolqError):
        return exc
    if isinstance(exc, HTTPException):
        code = exc.code or 500
        if code == 413:
            return RequestEntityTooLarge()
        if code == 405:
            return MethodNotAllowed()
        if code < 500:
            return MalformedRequest(exc.description or "The request could not be read.")
    return InternalError()


def render_http_error(exc: BaseException, request: Request) -> Response:
    """Any error on an SQS path, in the request's SQS protocol (never ``{"message": ...}``, never HTML)."""
    response = render_error(sqs_error_of(exc), guess_protocol(request), "")
    if isinstance(exc, HTTPException) and exc.code == 405 and request.method not in ("GET", "POST"):
        response.headers["Allow"] = "GET, POST"
    return response


def render_unknown_operation(request_id: str) -> Response:
    """A queue URL fetched with no action at all: AWS answers 404 ``<UnknownOperationException/>``
    (in XML whatever the client accepts)."""
    return Response('<?xml version="1.0"?><UnknownOperationException/>', 404,
                    {"x-amzn-RequestId": request_id}, mimetype="text/xml")


def guess_protocol(request: Request) -> str:
    """The protocol an error reply should use when parsing itself failed."""
    return "json" if request.headers.get("X-Amz-Target") or "json" in (request.mimetype or "") else "query"
