from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.not_authorized import NotAuthorized
from ...models.queue_summary import QueueSummary
from ...models.unavailable import Unavailable
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    prefix: str | Unset = '',
    limit: int | Unset = 10000,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["limit"] = limit


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/queue/1/_queues",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> NotAuthorized | Unavailable | list[QueueSummary] | str | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = QueueSummary.from_dict(response_200_item_data)



            response_200.append(response_200_item)

        return response_200

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = NotAuthorized.from_dict(response.json())



        return response_403

    if response.status_code == 503:
        response_503 = Unavailable.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[NotAuthorized | Unavailable | list[QueueSummary] | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = '',
    limit: int | Unset = 10000,

) -> Response[NotAuthorized | Unavailable | list[QueueSummary] | str]:
    """ List queues with their counts (spoolq extension)

    Args:
        prefix (str | Unset):  Default: ''.
        limit (int | Unset):  Default: 10000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[QueueSummary] | str]
     """


    kwargs = _get_kwargs(
        prefix=prefix,
limit=limit,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = '',
    limit: int | Unset = 10000,

) -> NotAuthorized | Unavailable | list[QueueSummary] | str | None:
    """ List queues with their counts (spoolq extension)

    Args:
        prefix (str | Unset):  Default: ''.
        limit (int | Unset):  Default: 10000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[QueueSummary] | str
     """


    return sync_detailed(
        client=client,
prefix=prefix,
limit=limit,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = '',
    limit: int | Unset = 10000,

) -> Response[NotAuthorized | Unavailable | list[QueueSummary] | str]:
    """ List queues with their counts (spoolq extension)

    Args:
        prefix (str | Unset):  Default: ''.
        limit (int | Unset):  Default: 10000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[QueueSummary] | str]
     """


    kwargs = _get_kwargs(
        prefix=prefix,
limit=limit,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = '',
    limit: int | Unset = 10000,

) -> NotAuthorized | Unavailable | list[QueueSummary] | str | None:
    """ List queues with their counts (spoolq extension)

    Args:
        prefix (str | Unset):  Default: ''.
        limit (int | Unset):  Default: 10000.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[QueueSummary] | str
     """


    return (await asyncio_detailed(
        client=client,
prefix=prefix,
limit=limit,

    )).parsed
