from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.batch_count import BatchCount
from ...models.json_error import JsonError
from ...models.not_authorized import NotAuthorized
from ...models.unavailable import Unavailable
from ...models.validation_errors import ValidationErrors
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    body: list[str],

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/dedupq/1/{queue}/ackbatches".format(queue=quote(str(queue), safe=""),),
    }

    _kwargs["json"] = body



    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str | None:
    if response.status_code == 200:
        response_200 = BatchCount.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str]:
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
    body: list[str],

) -> Response[BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str]:
    """ Acknowledge batches (spoolq extension)

    Args:
        queue (str):
        body (list[str]): batch tokens

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[str],

) -> BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str | None:
    """ Acknowledge batches (spoolq extension)

    Args:
        queue (str):
        body (list[str]): batch tokens

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str
     """


    return sync_detailed(
        queue=queue,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[str],

) -> Response[BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str]:
    """ Acknowledge batches (spoolq extension)

    Args:
        queue (str):
        body (list[str]): batch tokens

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: list[str],

) -> BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str | None:
    """ Acknowledge batches (spoolq extension)

    Args:
        queue (str):
        body (list[str]): batch tokens

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchCount | JsonError | NotAuthorized | Unavailable | ValidationErrors | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
body=body,

    )).parsed
