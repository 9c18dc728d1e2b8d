from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...types import File, FileTypes
from ...types import UNSET, Unset
from io import BytesIO



def _get_kwargs(
    queue: str,
    *,
    wait: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["wait"] = wait

    params["ttl"] = ttl


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/mq/{queue}/messages".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | File | str | None:
    if response.status_code == 200:
        response_200 = File(
             payload = BytesIO(response.content)
        )



        return response_200

    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = response.text
        return response_403

    if response.status_code == 404:
        response_404 = response.text
        return response_404

    if response.status_code == 503:
        response_503 = response.text
        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | File | str]:
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
    wait: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Response[Any | File | str]:
    """ Fetch (claim) one message

    Args:
        queue (str):
        wait (float | Unset):
        ttl (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
wait=wait,
ttl=ttl,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,
    wait: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Any | File | str | None:
    """ Fetch (claim) one message

    Args:
        queue (str):
        wait (float | Unset):
        ttl (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | str
     """


    return sync_detailed(
        queue=queue,
client=client,
wait=wait,
ttl=ttl,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    wait: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Response[Any | File | str]:
    """ Fetch (claim) one message

    Args:
        queue (str):
        wait (float | Unset):
        ttl (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | str]
     """


    kwargs = _get_kwargs(
        queue=queue,
wait=wait,
ttl=ttl,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,
    wait: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Any | File | str | None:
    """ Fetch (claim) one message

    Args:
        queue (str):
        wait (float | Unset):
        ttl (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
wait=wait,
ttl=ttl,

    )).parsed
