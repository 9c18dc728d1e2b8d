"""The errors only the SNS door raises, each with its wire identity.

An error is rendered (:func:`spoolq.http.sns.wire.render_error`) from the attributes every
:class:`~spoolq.errors.SpoolqError` declares: ``sqs_query_code`` is the Query protocol's
``<Code>`` (the name is the SQS door's; the Query protocol is the same), ``sqs_status`` the
HTTP status. Messages follow AWS's wording as LocalStack's snapshot tests recorded it from AWS
(``Invalid parameter: ...``, ``Topic does not exist``).
"""

from __future__ import annotations

from typing import ClassVar

from spoolq.errors import SpoolqError


class SnsError(SpoolqError):
    """Root of the errors only the SNS door raises."""

    sqs_fault: ClassVar[str] = "Sender"


class InvalidParameter(SnsError):
    """``Invalid parameter: <what>`` (with ``Reason: <why>`` when AWS gives one)."""

    sqs_type = "InvalidParameter"
    sqs_query_code = "InvalidParameter"

    def __init__(self, what: str, reason: str | None = None, *, raw: bool = False) -> None:
        if raw:
            super().__init__(what)
        elif reason is None:
            super().__init__(f"Invalid parameter: {what}")
        else:
            super().__init__(f"Invalid parameter: {what} Reason: {reason}")


class ParameterValueInvalid(SnsError):
    """A bad message attribute (its name, type or value)."""

    sqs_type = "ParameterValueInvalid"
    sqs_query_code = "ParameterValueInvalid"


class ValidationError(SnsError):
    sqs_type = "ValidationError"
    sqs_query_code = "ValidationError"


class NotFound(SnsError):
    sqs_type = "NotFound"
    sqs_query_code = "NotFound"
    sqs_status = 404


class TopicNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("Topic does not exist")


class SubscriptionNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("Subscription does not exist")


class ResourceNotFound(SnsError):
    """A tag action on a resource that does not exist."""

    sqs_type = "ResourceNotFound"
    sqs_query_code = "ResourceNotFound"
    sqs_status = 404

    def __init__(self) -> None:
        super().__init__("Resource does not exist")


class TagPolicy(SnsError):
    sqs_type = "TagPolicy"
    sqs_query_code = "TagPolicy"


class TagLimitExceeded(SnsError):
    sqs_type = "TagLimitExceeded"
    sqs_query_code = "TagLimitExceeded"

    def __init__(self) -> None:
        super().__init__("Could not complete request: tag quota of per resource exceeded")


class AuthorizationError(SnsError):
    """An identity without the permission an action needs (:mod:`.access`)."""

    sqs_type = "AuthorizationError"
    sqs_query_code = "AuthorizationError"
    sqs_status = 403


class InvalidAction(SnsError):
    sqs_type = "InvalidAction"
    sqs_query_code = "InvalidAction"

    def __init__(self, action: str) -> None:
        super().__init__(f"The action {action} is not valid for this web service.")


class MissingAction(SnsError):
    sqs_type = "MissingAction"
    sqs_query_code = "MissingAction"

    def __init__(self) -> None:
        super().__init__("Missing Action")


class EmptyBatchRequest(SnsError):
    sqs_type = "EmptyBatchRequest"
    sqs_query_code = "EmptyBatchRequest"

    def __init__(self) -> None:
        super().__init__("The batch request doesn't contain any entries.")


class TooManyEntriesInBatchRequest(SnsError):
    sqs_type = "TooManyEntriesInBatchRequest"
    sqs_query_code = "TooManyEntriesInBatchRequest"

    def __init__(self) -> None:
        super().__init__("The batch request contains more entries than permissible.")


class BatchEntryIdsNotDistinct(SnsError):
    sqs_type = "BatchEntryIdsNotDistinct"
    sqs_query_code = "BatchEntryIdsNotDistinct"

    def __init__(self) -> None:
        super().__init__("Two or more batch entries in the request have the same Id.")


class InvalidBatchEntryId(SnsError):
    sqs_type = "InvalidBatchEntryId"
    sqs_query_code = "InvalidBatchEntryId"


class BatchRequestTooLong(SnsError):
    sqs_type = "BatchRequestTooLong"
    sqs_query_code = "BatchRequestTooLong"

    def __init__(self) -> None:
        super().__init__("The length of all the messages put together is more than the limit.")


class RequestEntityTooLarge(SnsError):
    sqs_type = "RequestEntityTooLarge"
    sqs_query_code = "RequestEntityTooLarge"
    sqs_status = 413

    def __init__(self) -> None:
        super().__init__("The request body is over the server's limit.")


class MalformedRequest(SnsError):
    sqs_type = "MalformedInput"
    sqs_query_code = "MalformedInput"

    def __init__(self, message: str = "The request could not be read.") -> None:
        super().__init__(message)


class InternalError(SnsError):
    sqs_type = "InternalError"
    sqs_query_code = "InternalError"
    sqs_status = 500
    sqs_fault = "Receiver"

    def __init__(self) -> None:
        super().__init__("Internal Error")


def fault_of(exc: SpoolqError) -> str:
    """``Sender`` for a client's mistake, ``Receiver`` for the server's trouble."""
    if isinstance(exc, SnsError):
        return exc.sqs_fault
    return "Receiver" if exc.sqs_status >= 500 else "Sender"
