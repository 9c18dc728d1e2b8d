from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_error import ConsoleError
from ...models.console_rates import ConsoleRates
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    window: int | Unset = 600,
    queue: None | str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["window"] = window

    json_queue: None | str | Unset
    if isinstance(queue, Unset):
        json_queue = UNSET
    else:
        json_queue = queue
    params["queue"] = json_queue


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/console/api/rates",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleError | ConsoleRates | None:
    if response.status_code == 200:
        response_200 = ConsoleRates.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ConsoleError.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ConsoleError.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ConsoleError.from_dict(response.json())



        return response_403

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleError | ConsoleRates]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    window: int | Unset = 600,
    queue: None | str | Unset = UNSET,

) -> Response[ConsoleError | ConsoleRates]:
    """ Messages per second of each queue over the last hour (the server's history, every 5 s)

    Args:
        window (int | Unset):  Default: 600.
        queue (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleRates]
     """


    kwargs = _get_kwargs(
        window=window,
queue=queue,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    window: int | Unset = 600,
    queue: None | str | Unset = UNSET,

) -> ConsoleError | ConsoleRates | None:
    """ Messages per second of each queue over the last hour (the server's history, every 5 s)

    Args:
        window (int | Unset):  Default: 600.
        queue (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleRates
     """


    return sync_detailed(
        client=client,
window=window,
queue=queue,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    window: int | Unset = 600,
    queue: None | str | Unset = UNSET,

) -> Response[ConsoleError | ConsoleRates]:
    """ Messages per second of each queue over the last hour (the server's history, every 5 s)

    Args:
        window (int | Unset):  Default: 600.
        queue (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleRates]
     """


    kwargs = _get_kwargs(
        window=window,
queue=queue,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    window: int | Unset = 600,
    queue: None | str | Unset = UNSET,

) -> ConsoleError | ConsoleRates | None:
    """ Messages per second of each queue over the last hour (the server's history, every 5 s)

    Args:
        window (int | Unset):  Default: 600.
        queue (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleRates
     """


    return (await asyncio_detailed(
        client=client,
window=window,
queue=queue,

    )).parsed
