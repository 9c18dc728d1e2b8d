from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_error import ConsoleError
from ...models.console_move import ConsoleMove
from typing import cast



def _get_kwargs(
    ref: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/console/api/moves/{ref}/cancel".format(ref=quote(str(ref), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleError | ConsoleMove | None:
    if response.status_code == 200:
        response_200 = ConsoleMove.from_dict(response.json())



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

    if response.status_code == 404:
        response_404 = ConsoleError.from_dict(response.json())



        return response_404

    if response.status_code == 503:
        response_503 = ConsoleError.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleError | ConsoleMove]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    ref: str,
    *,
    client: AuthenticatedClient,

) -> Response[ConsoleError | ConsoleMove]:
    """ Cancel a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleMove]
     """


    kwargs = _get_kwargs(
        ref=ref,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    ref: str,
    *,
    client: AuthenticatedClient,

) -> ConsoleError | ConsoleMove | None:
    """ Cancel a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleMove
     """


    return sync_detailed(
        ref=ref,
client=client,

    ).parsed

async def asyncio_detailed(
    ref: str,
    *,
    client: AuthenticatedClient,

) -> Response[ConsoleError | ConsoleMove]:
    """ Cancel a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleMove]
     """


    kwargs = _get_kwargs(
        ref=ref,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    ref: str,
    *,
    client: AuthenticatedClient,

) -> ConsoleError | ConsoleMove | None:
    """ Cancel a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleMove
     """


    return (await asyncio_detailed(
        ref=ref,
client=client,

    )).parsed
