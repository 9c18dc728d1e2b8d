from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.claim_batch_meta import check_claim_batch_meta
from ...models.claim_batch_meta import ClaimBatchMeta
from ...models.message import Message
from ...models.not_authorized import NotAuthorized
from ...models.unavailable import Unavailable
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    queue: str,
    *,
    token: str,
    limit: int | Unset = 1000,
    ttl: int | Unset = 300,
    max_bytes: int | Unset = UNSET,
    meta: ClaimBatchMeta | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["token"] = token

    params["limit"] = limit

    params["ttl"] = ttl

    params["maxBytes"] = max_bytes

    json_meta: str | Unset = UNSET
    if not isinstance(meta, Unset):
        json_meta = meta

    params["meta"] = json_meta


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/queue/1/{queue}/claimbatch".format(queue=quote(str(queue), safe=""),),
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
    token: str,
    limit: int | Unset = 1000,
    ttl: int | Unset = 300,
    max_bytes: int | Unset = UNSET,
    meta: ClaimBatchMeta | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | list[Message] | str]:
    """ Claim a batch named by a token, or fetch it again (spoolq extension)

    Args:
        queue (str):
        token (str):
        limit (int | Unset):  Default: 1000.
        ttl (int | Unset):  Default: 300.
        max_bytes (int | Unset):
        meta (ClaimBatchMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[Message] | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
token=token,
limit=limit,
ttl=ttl,
max_bytes=max_bytes,
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
    token: str,
    limit: int | Unset = 1000,
    ttl: int | Unset = 300,
    max_bytes: int | Unset = UNSET,
    meta: ClaimBatchMeta | Unset = UNSET,

) -> NotAuthorized | Unavailable | list[Message] | str | None:
    """ Claim a batch named by a token, or fetch it again (spoolq extension)

    Args:
        queue (str):
        token (str):
        limit (int | Unset):  Default: 1000.
        ttl (int | Unset):  Default: 300.
        max_bytes (int | Unset):
        meta (ClaimBatchMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[Message] | str
     """


    return sync_detailed(
        queue=queue,
client=client,
token=token,
limit=limit,
ttl=ttl,
max_bytes=max_bytes,
meta=meta,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    token: str,
    limit: int | Unset = 1000,
    ttl: int | Unset = 300,
    max_bytes: int | Unset = UNSET,
    meta: ClaimBatchMeta | Unset = UNSET,

) -> Response[NotAuthorized | Unavailable | list[Message] | str]:
    """ Claim a batch named by a token, or fetch it again (spoolq extension)

    Args:
        queue (str):
        token (str):
        limit (int | Unset):  Default: 1000.
        ttl (int | Unset):  Default: 300.
        max_bytes (int | Unset):
        meta (ClaimBatchMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NotAuthorized | Unavailable | list[Message] | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
token=token,
limit=limit,
ttl=ttl,
max_bytes=max_bytes,
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
    token: str,
    limit: int | Unset = 1000,
    ttl: int | Unset = 300,
    max_bytes: int | Unset = UNSET,
    meta: ClaimBatchMeta | Unset = UNSET,

) -> NotAuthorized | Unavailable | list[Message] | str | None:
    """ Claim a batch named by a token, or fetch it again (spoolq extension)

    Args:
        queue (str):
        token (str):
        limit (int | Unset):  Default: 1000.
        ttl (int | Unset):  Default: 300.
        max_bytes (int | Unset):
        meta (ClaimBatchMeta | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NotAuthorized | Unavailable | list[Message] | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
token=token,
limit=limit,
ttl=ttl,
max_bytes=max_bytes,
meta=meta,

    )).parsed
