"""The SNS wire: which requests are SNS's, the Query protocol's parameters, replies and errors.

Which requests
    SNS shares the port and the path ``/`` with SQS, as AWS clients send both there when given
    one endpoint. A request is SNS's (:func:`is_sns`) when its SigV4 credential scope names the
    service ``sns`` (``Credential=<key>/<date>/<region>/sns/aws4_request``, in the Authorization
    header or a presigned URL's ``X-Amz-Credential``), or, unsigned (open mode, or with an API key
    in ``X-BV-API-Key``: the console's publish form), when its ``Action`` is one only SNS has. An SQS JSON request (``X-Amz-Target: AmazonSQS.*``) is never
    looked at further.

Query protocol (every SDK: botocore's and the JavaScript SDK's models of SNS are Query only)
    ``application/x-www-form-urlencoded`` with ``Action=<Action>`` (or the same in the query
    string of a GET). Flattened members are folded (:func:`parse_query`): ``X.member.N`` is a
    list, ``X.entry.N.key``/``.value`` (``Attributes``) and ``X.entry.N.Name``/``.Value``
    (``MessageAttributes``) a map. Replies are ``<ActionResponse><ActionResult>`` XML in the
    2010-03-31 namespace, lists as ``<member>`` items and maps as ``<entry><key/><value/></entry>``;
    errors are ``<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>``. A request
    whose ``Accept`` prefers ``application/json`` gets the reply as JSON,
    ``{"<Action>Response": {"<Action>Result": {...}, "ResponseMetadata": {...}}}``, as AWS
    negotiates it. Every reply carries its request id in ``x-amzn-RequestId``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from flask import Request

from spoolq.errors import SpoolqError
from spoolq.http import framing
from spoolq.http.framing import Response
from spoolq.http.sigv4 import CREDENTIAL
from spoolq.http.sns.errors import InvalidParameter, MalformedRequest, MissingAction, fault_of

XML_NAMESPACE = "http://sns.amazonaws.com/doc/2010-03-31/"
API_VERSION = "2010-03-31"
_AUTH_PARAMS = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
                "X-Amz-Signature", "X-Amz-Security-Token")
#: actions SNS has and SQS has not: an unsigned request naming one is SNS's
SNS_ONLY_ACTIONS = frozenset({
    "CreateTopic", "DeleteTopic", "GetTopicAttributes", "SetTopicAttributes", "ListTopics", "Subscribe",
    "Unsubscribe", "ConfirmSubscription", "GetSubscriptionAttributes", "SetSubscriptionAttributes",
    "ListSubscriptions", "ListSubscriptionsByTopic", "Publish", "PublishBatch", "TagResource", "UntagResource",
    "ListTagsForResource", "CheckIfPhoneNumberIsOptedOut", "CreatePlatformApplication", "CreatePlatformEndpoint",
    "CreateSMSSandboxPhoneNumber", "DeleteEndpoint", "DeletePlatformApplication", "DeleteSMSSandboxPhoneNumber",
    "GetDataProtectionPolicy", "GetEndpointAttributes", "GetPlatformApplicationAttributes", "GetSMSAttributes",
    "GetSMSSandboxAccountStatus", "ListEndpointsByPlatformApplication", "ListOriginationNumbers",
    "ListPhoneNumbersOptedOut", "ListPlatformApplications", "ListSMSSandboxPhoneNumbers", "OptInPhoneNumber",
    "PutDataProtectionPolicy", "SetEndpointAttributes", "SetPlatformApplicationAttributes", "SetSMSAttributes",
    "VerifySMSSandboxPhoneNumber",
})


class Entries(dict[str, Any]):
    """A reply member rendered as a map (``<entry><key/><value/></entry>``), not as elements."""


@dataclass(frozen=True)
class SnsRequest:
    action: str
    params: Mapping[str, Any]
    request_id: str
    json_reply: bool = False


def new_request_id() -> str:
    digits = os.urandom(16).hex()
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{'89ab'[int(digits[16], 16) & 3]}{digits[17:20]}-{digits[20:32]}"


def scope_service(environ: Mapping[str, Any], query: Mapping[str, str] | None = None) -> str | None:
    """The service named by the request's SigV4 credential scope, if it is signed."""
    match = CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match is None and query is not None and "X-Amz-Credential" in query:
        match = CREDENTIAL.search("Credential=" + query["X-Amz-Credential"])
    return match.group(4) if match else None


def is_sns(request: Request) -> bool:
    """Whether a request to ``/`` is SNS's (see the module docstring)."""
    environ = request.environ
    if "HTTP_X_AMZ_TARGET" in environ:  # SQS's JSON protocol (SNS has none)
        return False
    authorization = environ.get("HTTP_AUTHORIZATION")
    if authorization:
        match = CREDENTIAL.search(authorization)
        return match is not None and match.group(4) == "sns"
    if environ.get("QUERY_STRING") and "X-Amz-Credential" in request.args:
        return scope_service(environ, request.args) == "sns"
    action = _form(request).get("Action") or request.args.get("Action", "")
    return action in SNS_ONLY_ACTIONS


def _form(request: Request) -> dict[str, str]:
    """The form body's parameters (the last of a repeated name), read from the body as the app's
    first hook buffered it: werkzeug's form parser costs several times more for the same pairs."""
    environ = request.environ
    if not environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        return {}
    raw = framing.body_of(environ)
    if raw is None:
        raw = request.get_data(cache=True)
    try:
        return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        raise MalformedRequest("The request body is not UTF-8.") from None


def parse_request(request: Request, request_id: str) -> SnsRequest:
    form = _form(request)
    merged = {**request.args.to_dict(flat=True), **form} if request.environ.get("QUERY_STRING") else form
    action = merged.pop("Action", "")
    if not action:
        raise MissingAction()
    merged.pop("Version", None)
    for name in _AUTH_PARAMS:
        merged.pop(name, None)
    json_reply = "application/json" in request.environ.get("HTTP_ACCEPT", "") and \
        request.accept_mimetypes.best_match(["text/xml", "application/json"]) == "application/json"
    return SnsRequest(action, parse_query(merged), request_id, json_reply)


MAX_QUERY_DEPTH = 10


def parse_query(flat: Mapping[str, str]) -> dict[str, Any]:
    """Fold flattened Query parameters: ``.member.N`` lists and ``.entry.N`` maps (see the module docstring)."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        if len(parts) > MAX_QUERY_DEPTH:
            raise InvalidParameter(f"The parameter name {key[:80]} is nested too deeply.", raw=True)
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    folded = _fold(tree)
    assert isinstance(folded, dict)
    return folded


def _indexed(node: Mapping[str, Any]) -> list[Any]:
    return [v for _, v in sorted((int(k), v) for k, v in node.items() if k.isdigit())]


def _fold(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if set(node) == {"member"} and isinstance(node["member"], dict):
        return [_fold(item) for item in _indexed(node["member"])]
    if set(node) == {"entry"} and isinstance(node["entry"], dict):
        folded: dict[str, Any] = {}
        for item in _indexed(node["entry"]):
            if not isinstance(item, dict):
                continue
            key = item.get("key", item.get("Name"))
            if isinstance(key, str):
                folded[key] = _fold(item.get("value", item.get("Value")))
        return folded
    return {key: _fold(value) for key, value in node.items()}


def _xml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return escape(str(value), {"\r": "&#xD;"})


def _xml(name: str, value: Any) -> str:
    if isinstance(value, Entries):
        inner = "".join(f"<entry><key>{_xml_value(k)}</key><value>{_xml_value(v)}</value></entry>"
                        for k, v in value.items())
        return f"<{name}>{inner}</{name}>"
    if isinstance(value, list):
        return f"<{name}>{''.join(_xml('member', item) for item in value)}</{name}>"
    if isinstance(value, Mapping):
        return f"<{name}>{''.join(_xml(k, v) for k, v in value.items() if v is not None)}</{name}>"
    return f"<{name}>{_xml_value(value)}</{name}>"


def render(req: SnsRequest, result: Mapping[str, Any]) -> Response:
    """A success reply: XML, or JSON where the client asked for it."""
    headers = {"x-amzn-RequestId": req.request_id}
    if req.json_reply:
        doc = {f"{req.action}Response": {f"{req.action}Result": dict(result) or None,
                                         "ResponseMetadata": {"RequestId": req.request_id}}}
        return Response(json.dumps(doc), 200, headers, mimetype="application/json")
    body = "".join(_xml(k, v) for k, v in result.items() if v is not None)
    result_xml = f"<{req.action}Result>{body}</{req.action}Result>" if body else f"<{req.action}Result/>"
    xml = (f'<?xml version="1.0"?><{req.action}Response xmlns="{XML_NAMESPACE}">{result_xml}'
           f"<ResponseMetadata><RequestId>{req.request_id}</RequestId></ResponseMetadata></{req.action}Response>")
    return Response(xml, 200, headers, mimetype="text/xml")


def render_error(exc: SpoolqError, request_id: str, json_reply: bool = False) -> Response:
    """The one place an error becomes an SNS reply."""
    request_id = request_id or new_request_id()
    fault = fault_of(exc)
    headers = {"x-amzn-RequestId": request_id, "x-amzn-query-error": f"{exc.sqs_query_code};{fault}"}
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if json_reply:
        doc = {"Error": {"Type": fault, "Code": exc.sqs_query_code, "Message": exc.message},
               "RequestId": request_id}
        return Response(json.dumps(doc), exc.sqs_status, headers, mimetype="application/json")
    xml = (f'<?xml version="1.0"?><ErrorResponse xmlns="{XML_NAMESPACE}"><Error><Type>{fault}</Type>'
           f"<Code>{escape(exc.sqs_query_code)}</Code><Message>{_xml_value(exc.message)}</Message></Error>"
           f"<RequestId>{request_id}</RequestId></ErrorResponse>")
    return Response(xml, exc.sqs_status, headers, mimetype="text/xml")
