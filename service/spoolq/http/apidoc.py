"""Helpers that build the OpenAPI operation objects the doors attach with ``Blueprint.doc``.

Every operation gets a stable ``operationId`` (the verb: ``send``, ``poll``, ``dedup_poll``,
``mq_send``...), its parameters from the query schemas in :mod:`spoolq.http.schemas`, and every
status it can answer with, so a contract checker can hold the server to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask_smorest import Blueprint
from marshmallow import Schema

from spoolq.http import schemas as s

SchemaRef = type[Schema] | Schema | Mapping[str, Any]

#: an API key, in the header or the query; the empty alternative: a service with no identities configured
#: (open mode, loopback only unless --allow-open) takes requests without one. With identities every
#: operation needs a key (403 without one).
SECURITY: list[dict[str, list[str]]] = [{"apiKeyHeader": []}, {"apiKeyQuery": []}, {}]
#: the console's operations: the key in the header only (or none in open mode)
CONSOLE_SECURITY: list[dict[str, list[str]]] = [{"apiKeyHeader": []}, {}]
_KEYS = ("an API key from the config file's api_keys; required when the service has identities configured, "
         "not asked for in open mode (no identities)")
SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-BV-API-Key", "description": _KEYS},
    "apiKeyQuery": {"type": "apiKey", "in": "query", "name": "APIKey", "description": _KEYS},
}


def null_means_null(converter: Any, field: Any, ret: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """apispec attribute function: a nullable nested object is that object or ``null``; apispec's own
    second alternative, ``{"type": "object", "nullable": true}``, would admit any object."""
    alternatives = ret.get("anyOf")
    if getattr(field, "allow_none", False) and isinstance(alternatives, list) and len(alternatives) == 2 \
            and alternatives[1] == {"type": "object", "nullable": True}:
        alternatives[1] = {"type": "object", "nullable": True, "enum": [None]}
    return {}


def json_content(schema: SchemaRef) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _x_bv(description: str) -> dict[str, Any]:
    return {"X-BV-Exception": {"description": description, "schema": {"type": "string"}}}


def emodb_errors(*, body: bool = False, queue_forbidden: bool = False, move: bool = False,
                 not_found: bool = False) -> dict[str, Any]:
    """The error responses every EmoDB operation may give."""
    responses: dict[str, Any] = {
        "400": {
            "description": "invalid argument (text/plain, X-BV-Exception: java.lang.IllegalArgumentException), "
                           "unparsable query parameter (text/plain) or malformed JSON body (application/json)",
            "headers": _x_bv("java.lang.IllegalArgumentException when the service rejected a value"),
            "content": {"text/plain": {"schema": s.TEXT}, "application/json": {"schema": s.JsonErrorSchema}},
        },
        "403": {
            "description": "unknown key or missing permission",
            "headers": _x_bv("com.bazaarvoice.emodb.common.api.UnauthorizedException"),
            "content": json_content(
                {"oneOf": [s.NotAuthorizedSchema, s.QueueForbiddenSchema]} if queue_forbidden
                else s.NotAuthorizedSchema),
        },
        "503": {
            "description": "storage cannot guarantee durability now; retry after Retry-After seconds",
            "headers": {"Retry-After": {"schema": {"type": "integer"}},
                        **_x_bv("com.bazaarvoice.emodb.common.api.ServiceUnavailableException")},
            "content": json_content(s.UnavailableSchema),
        },
    }
    if body:
        responses["413"] = {"description": "request body over the server's limit", "content": json_content(s.JsonErrorSchema)}
        responses["415"] = {"description": "Content-Type is not application/json", "content": json_content(s.JsonErrorSchema)}
        responses["422"] = {"description": "empty body or the literal null", "content": json_content(s.ValidationErrorsSchema)}
    if move:
        responses["404"] = {
            "description": "unknown move reference",
            "headers": _x_bv("com.bazaarvoice.emodb.queue.api.UnknownMoveException"),
            "content": json_content(s.UnknownMoveSchema),
        }
    if not_found:
        responses["404"] = {"description": "no such queue", "content": json_content(s.JsonErrorSchema)}
    return responses


def queue_path_param(*, store_names: bool = False) -> dict[str, Any]:
    """The ``{queue}`` path parameter; ``store_names``: ``/queue/1``, which also takes the store name
    of a queue another door made."""
    if store_names:
        return {"in": "path", "name": "queue", "required": True,
                "description": "queue name (EmoDB's rule); also, outside the pattern, the store name of an "
                               "existing queue another door made (sqs:123456789012:us-east-1:Orders): a store "
                               "name of no existing queue is refused as an EmoDB name (400)",
                "schema": {"type": "string", "pattern": s.QUEUE_NAME_PATTERN}}
    return {"in": "path", "name": "queue", "required": True, "description": "queue name",
            "schema": {"type": "string", "pattern": s.QUEUE_NAME_PATTERN}}


def operation(operation_id: str, summary: str, *, ok: Mapping[str, Any], query: type[Schema] | None = None,
              body: SchemaRef | None = None, errors: Mapping[str, Any] | None = None,
              description: str | None = None, secure: bool = True) -> dict[str, Any]:
    """One operation object for ``Blueprint.doc(**operation(...))``."""
    doc: dict[str, Any] = {"operationId": operation_id, "summary": summary, "responses": {**ok, **(errors or {})}}
    if description:
        doc["description"] = description
    if query is not None:
        doc["parameters"] = [{"in": "query", "schema": query}]
    if body is not None:
        doc["requestBody"] = {"required": True, "content": json_content(body)}
    if secure:
        doc["security"] = SECURITY
    return doc


def ok_json(schema: SchemaRef, description: str = "success") -> dict[str, Any]:
    return {"200": {"description": description, "content": json_content(schema)}}


def documented(view: Callable[..., Any], **doc: Any) -> Callable[..., Any]:
    """``Blueprint.doc(**doc)(view)`` without the wrapper it puts around the view: flask-smorest
    reads the documentation from ``_apidoc``, and the view Flask calls is ``view`` itself (the
    wrapper only looked the app up and asked it, on every request, whether ``view`` is a
    coroutine)."""
    wrapper = Blueprint.doc(**doc)(view)
    view._apidoc = wrapper._apidoc  # type: ignore[attr-defined]
    return view
