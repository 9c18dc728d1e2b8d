from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.move_status import MoveStatus
from ...models.not_authorized import NotAuthorized
from ...models.unavailable import Unavailable
from ...models.unknown_move import UnknownMove
from typing import cast



def _get_kwargs(
    ref: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/queue/1/_move/{ref}".format(ref=quote(str(ref), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> MoveStatus | NotAuthorized | Unavailable | UnknownMove | str | None:
    if response.status_code == 200:
        response_200 = MoveStatus.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = NotAuthorized.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = UnknownMove.from_dict(response.json())



        return response_404

    if response.status_code == 503:
        response_503 = Unavailable.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[MoveStatus | NotAuthorized | Unavailable | UnknownMove | str]:
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

) -> Response[MoveStatus | NotAuthorized | Unavailable | UnknownMove | str]:
    """ Status of a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[MoveStatus | NotAuthorized | Unavailable | UnknownMove | str]
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

) -> MoveStatus | NotAuthorized | Unavailable | UnknownMove | str | None:
    """ Status of a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        MoveStatus | NotAuthorized | Unavailable | UnknownMove | str
     """


    return sync_detailed(
        ref=ref,
client=client,

    ).parsed

async def asyncio_detailed(
    ref: str,
    *,
    client: AuthenticatedClient,

) -> Response[MoveStatus | NotAuthorized | Unavailable | UnknownMove | str]:
    """ Status of a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[MoveStatus | NotAuthorized | Unavailable | UnknownMove | str]
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

) -> MoveStatus | NotAuthorized | Unavailable | UnknownMove | str | None:
    """ Status of a move

    Args:
        ref (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        MoveStatus | NotAuthorized | Unavailable | UnknownMove | str
     """


    return (await asyncio_detailed(
        ref=ref,
client=client,

    )).parsed
