"""SQS-specific errors and how every error looks on the SQS wire.

Each class declares its wire identity once, like the rest of the
:class:`~spoolq.errors.SpoolqError` tree: ``sqs_type`` is the shape name botocore
keys its exception classes by (rendered as ``__type: com.amazonaws.sqs#<type>``),
``sqs_query_code`` the legacy Query-era code sent in the ``x-amzn-query-error``
header (so ``e.response["Error"]["Code"]`` is what AWS gives), and ``sqs_status``
the HTTP status. Messages follow AWS's wording where it is known.

Store errors are rendered through the same attributes; :func:`sqs_message` only
swaps the store's wording for AWS's where clients compare messages verbatim
(``QueueDoesNotExist``).
"""

from __future__ import annotations

from typing import ClassVar

from spoolq.errors import QueueNotFound, SpoolqError

# the SigV4 errors, shared with the SNS door (re-exported: the SQS door names them from here)
from spoolq.http.sigv4 import InvalidClientTokenId as InvalidClientTokenId
from spoolq.http.sigv4 import MissingAuthenticationToken as MissingAuthenticationToken
from spoolq.http.sigv4 import RequestExpired as RequestExpired
from spoolq.http.sigv4 import SignatureDoesNotMatch as SignatureDoesNotMatch


class SqsError(SpoolqError):
    """Root of the errors only the SQS front door raises."""

    sqs_fault: ClassVar[str] = "Sender"


class InvalidParameterValue(SqsError):
    # AWS's JSON type is the exception shape, the legacy code stays (recorded: QueryErrorCode
    # "InvalidParameterValueException", Code "InvalidParameterValue")
    sqs_type = "InvalidParameterValueException"
    sqs_query_code = "InvalidParameterValue"


class MissingParameter(SqsError):
    sqs_type = "com.amazon.coral.service#MissingRequiredParameterException"
    sqs_query_code = "MissingParameter"

    def __init__(self, parameter: str) -> None:
        super().__init__(f"The request must contain the parameter {parameter}.")


class InvalidAction(SqsError):
    sqs_type = "com.amazon.coral.service#UnknownOperationException"
    sqs_query_code = "InvalidAction"


class InvalidParameterCombination(SqsError):
    sqs_type = "InvalidParameterCombination"
    sqs_query_code = "InvalidParameterCombination"


NO_SUCH_QUEUE = "The specified queue does not exist."
#: the Query protocol's wording of the same error (recorded from AWS)
NO_SUCH_QUEUE_QUERY = "The specified queue does not exist for this wsdl version."


class QueueDoesNotExist(SqsError):
    sqs_type = "QueueDoesNotExist"
    sqs_query_code = "AWS.SimpleQueueService.NonExistentQueue"

    def __init__(self, message: str = NO_SUCH_QUEUE) -> None:
        super().__init__(message)


class QueueNameExists(SqsError):
    sqs_type = "QueueNameExists"
    sqs_query_code = "QueueAlreadyExists"


class ReceiptHandleIsInvalid(SqsError):
    sqs_type = "ReceiptHandleIsInvalid"
    sqs_query_code = "ReceiptHandleIsInvalid"

    def __init__(self, message: str = "The input receipt handle is invalid.") -> None:
        super().__init__(message)


class MessageNotInflight(SqsError):
    sqs_type = "MessageNotInflight"
    sqs_query_code = "AWS.SimpleQueueService.MessageNotInflight"

    def __init__(self) -> None:
        super().__init__("The message referred to isn't in flight.")


class InvalidAttributeName(SqsError):
    sqs_type = "InvalidAttributeName"
    sqs_query_code = "InvalidAttributeName"

    def __init__(self, name: str, message: str | None = None) -> None:
        super().__init__(message or f"Unknown Attribute {name}.")


class InvalidAttributeValue(SqsError):
    sqs_type = "InvalidAttributeValue"
    sqs_query_code = "InvalidAttributeValue"

    def __init__(self, name: str, reason: str = "") -> None:
        text = f"Invalid value for the parameter {name}."
        super().__init__(f"{text} Reason: {reason}" if reason else text)


class InvalidMessageContents(SqsError):
    sqs_type = "InvalidMessageContents"
    sqs_query_code = "InvalidMessageContents"


class EmptyBatchRequest(SqsError):
    sqs_type = "EmptyBatchRequest"
    sqs_query_code = "AWS.SimpleQueueService.EmptyBatchRequest"

    def __init__(self, entry: str) -> None:
        super().__init__(f"There should be at least one {entry} in the request.")


class TooManyEntriesInBatchRequest(SqsError):
    sqs_type = "TooManyEntriesInBatchRequest"
    sqs_query_code = "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"

    def __init__(self, count: int) -> None:
        super().__init__(f"Maximum number of entries per request are 10. You have sent {count}.")


class BatchEntryIdsNotDistinct(SqsError):
    sqs_type = "BatchEntryIdsNotDistinct"
    sqs_query_code = "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"Id {entry_id} repeated.")


class InvalidBatchEntryId(SqsError):
    sqs_type = "InvalidBatchEntryId"
    sqs_query_code = "AWS.SimpleQueueService.InvalidBatchEntryId"

    def __init__(self) -> None:
        super().__init__("A batch entry id can only contain alphanumeric characters, hyphens and "
                         "underscores. It can be at most 80 letters long.")


class BatchRequestTooLong(SqsError):
    sqs_type = "BatchRequestTooLong"
    sqs_query_code = "AWS.SimpleQueueService.BatchRequestTooLong"

    def __init__(self, limit: int, length: int) -> None:
        super().__init__(f"Batch requests cannot be longer than {limit} bytes. "
                         f"You have sent {length} bytes.")


class PurgeQueueInProgress(SqsError):
    sqs_type = "PurgeQueueInProgress"
    sqs_query_code = "AWS.SimpleQueueService.PurgeQueueInProgress"
    sqs_status = 403

    def __init__(self, queue_name: str) -> None:
        super().__init__(f"Only one PurgeQueue operation on {queue_name} is allowed every 60 seconds.")


class OverLimit(SqsError):
    sqs_type = "OverLimit"
    sqs_query_code = "OverLimit"
    sqs_status = 403


class ResourceNotFound(SqsError):
    sqs_type = "ResourceNotFoundException"
    sqs_query_code = "ResourceNotFoundException"
    sqs_status = 404  # recorded: test_destination_needs_to_exist


class UnsupportedOperation(SqsError):
    sqs_type = "UnsupportedOperation"
    sqs_query_code = "AWS.SimpleQueueService.UnsupportedOperation"






class AccessDenied(SqsError):
    """An authenticated identity without the permission an action needs on a queue."""

    sqs_type = "com.amazon.coral.service#AccessDeniedException"
    sqs_query_code = "AccessDenied"
    sqs_status = 403


class RequestEntityTooLarge(SqsError):
    """A request body over the server's ``--max-body-bytes``, however it was framed."""

    sqs_type = "RequestEntityTooLarge"
    sqs_query_code = "RequestEntityTooLarge"
    sqs_status = 413

    def __init__(self) -> None:
        super().__init__("The request body is over the server's limit.")


class MalformedRequest(SqsError):
    """An HTTP request that could not be read (bad chunk framing, a short body, ...)."""

    sqs_type = "com.amazon.coral.service#SerializationException"
    sqs_query_code = "MalformedInput"

    def __init__(self, message: str = "The request could not be read.") -> None:
        super().__init__(message)


class MethodNotAllowed(SqsError):
    """An HTTP method other than GET and POST on the SQS door."""

    sqs_type = "com.amazon.coral.service#UnknownOperationException"
    sqs_query_code = "InvalidAction"
    sqs_status = 405

    def __init__(self) -> None:
        super().__init__("The SQS endpoint accepts GET and POST requests only.")


class InternalError(SqsError):
    sqs_type = "InternalError"
    sqs_query_code = "InternalError"
    sqs_status = 500
    sqs_fault = "Receiver"

    def __init__(self) -> None:
        super().__init__("We encountered an internal error. Please try again.")


def sqs_message(exc: SpoolqError, protocol: str = "json") -> str:
    """The message an SQS client sees for ``exc`` (AWS's wording for store errors it knows)."""
    message = NO_SUCH_QUEUE if isinstance(exc, QueueNotFound) else exc.message
    if protocol == "query" and message == NO_SUCH_QUEUE:
        return NO_SUCH_QUEUE_QUERY
    return message


def sqs_fault(exc: SpoolqError) -> str:
    """``Sender`` for client mistakes, ``Receiver`` for server trouble."""
    if isinstance(exc, SqsError):
        return exc.sqs_fault
    return "Receiver" if exc.sqs_status >= 500 else "Sender"
