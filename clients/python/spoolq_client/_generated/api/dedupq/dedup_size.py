from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.dedup_size_partitioned import check_dedup_size_partitioned
from ...models.dedup_size_partitioned import DedupSizePartitioned
from ...models.not_authorized import NotAuthorized
from ...models.unavailable import Unavailable
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    limit: int | Unset = UNSET,
    partitioned: DedupSizePartitioned | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["limit"] = limit

    json_partitioned: str | Unset = UNSET
    if not isinstance(partitioned, Unset):
        json_partitioned = partitioned

    params["partitioned"] = json_partitioned


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/dedupq/1/{queue}/size".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> NotAuthorized | Unavailable | int | str | None:
    if response.status_code == 200:
        response_200 = cast(int, response.json())
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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[NotAuthorized | Unavailable | int | str]:
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
    limit: int | Unset = UNSET,
    partitioned: DedupSizePartitioned | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | int | str]:
    """ Count messages (exact up to limit)

    Args:
        queue (str):
        limit (int | Unset):
        partitioned (DedupSizePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | int | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
limit=limit,
partitioned=partitioned,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    partitioned: DedupSizePartitioned | Unset = UNSET,

) -> NotAuthorized | Unavailable | int | str | None:
    """ Count messages (exact up to limit)

    Args:
        queue (str):
        limit (int | Unset):
        partitioned (DedupSizePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | int | str
     """


    return sync_detailed(
        queue=queue,
client=client,
limit=limit,
partitioned=partitioned,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    partitioned: DedupSizePartitioned | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | int | str]:
    """ Count messages (exact up to limit)

    Args:
        queue (str):
        limit (int | Unset):
        partitioned (DedupSizePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | int | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
limit=limit,
partitioned=partitioned,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    partitioned: DedupSizePartitioned | Unset = UNSET,

) -> NotAuthorized | Unavailable | int | str | None:
    """ Count messages (exact up to limit)

    Args:
        queue (str):
        limit (int | Unset):
        partitioned (DedupSizePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | int | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
limit=limit,
partitioned=partitioned,

    )).parsed
