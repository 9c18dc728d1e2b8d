from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.dedup_send_batch_archive import check_dedup_send_batch_archive
from ...models.dedup_send_batch_archive import DedupSendBatchArchive
from ...models.dedup_send_batch_at_most_once import check_dedup_send_batch_at_most_once
from ...models.dedup_send_batch_at_most_once import DedupSendBatchAtMostOnce
from ...models.json_error import JsonError
from ...models.not_authorized import NotAuthorized
from ...models.success import Success
from ...models.unavailable import Unavailable
from ...models.validation_errors import ValidationErrors
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    body: list[Any],
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,
    at_most_once: DedupSendBatchAtMostOnce | Unset = UNSET,
    archive: DedupSendBatchArchive | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    params: dict[str, Any] = {}

    params["delay"] = delay

    params["ttl"] = ttl

    json_at_most_once: str | Unset = UNSET
    if not isinstance(at_most_once, Unset):
        json_at_most_once = at_most_once

    params["atMostOnce"] = json_at_most_once

    json_archive: str | Unset = UNSET
    if not isinstance(archive, Unset):
        json_archive = archive

    params["archive"] = json_archive


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/dedupq/1/{queue}/sendbatch".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }

    _kwargs["json"] = body



    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str | None:
    if response.status_code == 200:
        response_200 = Success.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = NotAuthorized.from_dict(response.json())



        return response_403

    if response.status_code == 413:
        response_413 = JsonError.from_dict(response.json())



        return response_413

    if response.status_code == 415:
        response_415 = JsonError.from_dict(response.json())



        return response_415

    if response.status_code == 422:
        response_422 = ValidationErrors.from_dict(response.json())



        return response_422

    if response.status_code == 503:
        response_503 = Unavailable.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[Any],
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,
    at_most_once: DedupSendBatchAtMostOnce | Unset = UNSET,
    archive: DedupSendBatchArchive | Unset = UNSET,

) -> Response[JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str]:
    """ Send messages to one queue (all or nothing)

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        at_most_once (DedupSendBatchAtMostOnce | Unset):
        archive (DedupSendBatchArchive | Unset):
        body (list[Any]): messages; null elements are stored

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,
delay=delay,
ttl=ttl,
at_most_once=at_most_once,
archive=archive,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[Any],
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,
    at_most_once: DedupSendBatchAtMostOnce | Unset = UNSET,
    archive: DedupSendBatchArchive | Unset = UNSET,

) -> JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str | None:
    """ Send messages to one queue (all or nothing)

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        at_most_once (DedupSendBatchAtMostOnce | Unset):
        archive (DedupSendBatchArchive | Unset):
        body (list[Any]): messages; null elements are stored

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str
     """


    return sync_detailed(
        queue=queue,
client=client,
body=body,
delay=delay,
ttl=ttl,
at_most_once=at_most_once,
archive=archive,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[Any],
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,
    at_most_once: DedupSendBatchAtMostOnce | Unset = UNSET,
    archive: DedupSendBatchArchive | Unset = UNSET,

) -> Response[JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str]:
    """ Send messages to one queue (all or nothing)

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        at_most_once (DedupSendBatchAtMostOnce | Unset):
        archive (DedupSendBatchArchive | Unset):
        body (list[Any]): messages; null elements are stored

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,
delay=delay,
ttl=ttl,
at_most_once=at_most_once,
archive=archive,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[Any],
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,
    at_most_once: DedupSendBatchAtMostOnce | Unset = UNSET,
    archive: DedupSendBatchArchive | Unset = UNSET,

) -> JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str | None:
    """ Send messages to one queue (all or nothing)

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        at_most_once (DedupSendBatchAtMostOnce | Unset):
        archive (DedupSendBatchArchive | Unset):
        body (list[Any]): messages; null elements are stored

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JsonError | NotAuthorized | Success | Unavailable | ValidationErrors | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
body=body,
delay=delay,
ttl=ttl,
at_most_once=at_most_once,
archive=archive,

    )).parsed
