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
    body: File | Unset = UNSET,
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    params: dict[str, Any] = {}

    params["delay"] = delay

    params["ttl"] = ttl


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/mq/{queue}/messages".format(queue=quote(str(queue), safe=""),),
        "params": params,
    }

    if not isinstance(body, Unset):
        _kwargs["content"] = body.payload
    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> str | None:
    if response.status_code == 201:
        response_201 = response.text
        return response_201

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = response.text
        return response_403

    if response.status_code == 404:
        response_404 = response.text
        return response_404

    if response.status_code == 413:
        response_413 = response.text
        return response_413

    if response.status_code == 503:
        response_503 = response.text
        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[str]:
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
    body: File | Unset = UNSET,
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Response[str]:
    """ Add a message

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        body (File | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,
delay=delay,
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
    body: File | Unset = UNSET,
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> str | None:
    """ Add a message

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        body (File | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        str
     """


    return sync_detailed(
        queue=queue,
client=client,
body=body,
delay=delay,
ttl=ttl,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,
    body: File | Unset = UNSET,
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> Response[str]:
    """ Add a message

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        body (File | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[str]
     """


    kwargs = _get_kwargs(
        queue=queue,
body=body,
delay=delay,
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
    body: File | Unset = UNSET,
    delay: float | Unset = UNSET,
    ttl: float | Unset = UNSET,

) -> str | None:
    """ Add a message

    Args:
        queue (str):
        delay (float | Unset):
        ttl (float | Unset):
        body (File | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,
body=body,
delay=delay,
ttl=ttl,

    )).parsed
