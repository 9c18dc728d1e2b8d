from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.dedup_purge_partitioned import check_dedup_purge_partitioned
from ...models.dedup_purge_partitioned import DedupPurgePartitioned
from ...models.not_authorized import NotAuthorized
from ...models.success import Success
from ...models.unavailable import Unavailable
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    partitioned: DedupPurgePartitioned | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_partitioned: str | Unset = UNSET
    if not isinstance(partitioned, Unset):
        json_partitioned = partitioned

    params["partitioned"] = json_partitioned


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/dedupq/1/{queue}".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> NotAuthorized | Success | Unavailable | str | None:
    if response.status_code == 200:
        response_200 = Success.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[NotAuthorized | Success | Unavailable | str]:
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
    partitioned: DedupPurgePartitioned | Unset = UNSET,

) -> Response[NotAuthorized | Success | Unavailable | str]:
    """ Delete every message

    Args:
        queue (str):
        partitioned (DedupPurgePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Success | Unavailable | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
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
    partitioned: DedupPurgePartitioned | Unset = UNSET,

) -> NotAuthorized | Success | Unavailable | str | None:
    """ Delete every message

    Args:
        queue (str):
        partitioned (DedupPurgePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Success | Unavailable | str
     """


    return sync_detailed(
        queue=queue,
client=client,
partitioned=partitioned,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    partitioned: DedupPurgePartitioned | Unset = UNSET,

) -> Response[NotAuthorized | Success | Unavailable | str]:
    """ Delete every message

    Args:
        queue (str):
        partitioned (DedupPurgePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Success | Unavailable | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
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
    partitioned: DedupPurgePartitioned | Unset = UNSET,

) -> NotAuthorized | Success | Unavailable | str | None:
    """ Delete every message

    Args:
        queue (str):
        partitioned (DedupPurgePartitioned | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Success | Unavailable | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
partitioned=partitioned,

    )).parsed
