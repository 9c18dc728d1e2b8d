from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.message import Message
from ...models.not_authorized import NotAuthorized
from ...models.poll_meta import check_poll_meta
from ...models.poll_meta import PollMeta
from ...models.poll_partitioned import check_poll_partitioned
from ...models.poll_partitioned import PollPartitioned
from ...models.unavailable import Unavailable
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    partitioned: PollPartitioned | Unset = UNSET,
    ttl: int | Unset = UNSET,
    limit: int | Unset = 10,
    wait: float | Unset = UNSET,
    meta: PollMeta | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_partitioned: str | Unset = UNSET
    if not isinstance(partitioned, Unset):
        json_partitioned = partitioned

    params["partitioned"] = json_partitioned

    params["ttl"] = ttl

    params["limit"] = limit

    params["wait"] = wait

    json_meta: str | Unset = UNSET
    if not isinstance(meta, Unset):
        json_meta = meta

    params["meta"] = json_meta


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/queue/1/{queue}/poll".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> NotAuthorized | Unavailable | list[Message] | str | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = Message.from_dict(response_200_item_data)



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[NotAuthorized | Unavailable | list[Message] | str]:
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
    partitioned: PollPartitioned | Unset = UNSET,
    ttl: int | Unset = UNSET,
    limit: int | Unset = 10,
    wait: float | Unset = UNSET,
    meta: PollMeta | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | list[Message] | str]:
    """ Claim and return up to limit messages

    Args:
        queue (str):
        partitioned (PollPartitioned | Unset):
        ttl (int | Unset):
        limit (int | Unset):  Default: 10.
        wait (float | Unset):
        meta (PollMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[Message] | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
partitioned=partitioned,
ttl=ttl,
limit=limit,
wait=wait,
meta=meta,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,
    partitioned: PollPartitioned | Unset = UNSET,
    ttl: int | Unset = UNSET,
    limit: int | Unset = 10,
    wait: float | Unset = UNSET,
    meta: PollMeta | Unset = UNSET,

) -> NotAuthorized | Unavailable | list[Message] | str | None:
    """ Claim and return up to limit messages

    Args:
        queue (str):
        partitioned (PollPartitioned | Unset):
        ttl (int | Unset):
        limit (int | Unset):  Default: 10.
        wait (float | Unset):
        meta (PollMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[Message] | str
     """


    return sync_detailed(
        queue=queue,
client=client,
partitioned=partitioned,
ttl=ttl,
limit=limit,
wait=wait,
meta=meta,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    partitioned: PollPartitioned | Unset = UNSET,
    ttl: int | Unset = UNSET,
    limit: int | Unset = 10,
    wait: float | Unset = UNSET,
    meta: PollMeta | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | list[Message] | str]:
    """ Claim and return up to limit messages

    Args:
        queue (str):
        partitioned (PollPartitioned | Unset):
        ttl (int | Unset):
        limit (int | Unset):  Default: 10.
        wait (float | Unset):
        meta (PollMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[Message] | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
partitioned=partitioned,
ttl=ttl,
limit=limit,
wait=wait,
meta=meta,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,
    partitioned: PollPartitioned | Unset = UNSET,
    ttl: int | Unset = UNSET,
    limit: int | Unset = 10,
    wait: float | Unset = UNSET,
    meta: PollMeta | Unset = UNSET,

) -> NotAuthorized | Unavailable | list[Message] | str | None:
    """ Claim and return up to limit messages

    Args:
        queue (str):
        partitioned (PollPartitioned | Unset):
        ttl (int | Unset):
        limit (int | Unset):  Default: 10.
        wait (float | Unset):
        meta (PollMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[Message] | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
partitioned=partitioned,
ttl=ttl,
limit=limit,
wait=wait,
meta=meta,

    )).parsed
