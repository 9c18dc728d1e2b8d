from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_error import ConsoleError
from ...models.console_ok import ConsoleOk
from typing import cast



def _get_kwargs(
    name: str,
    message_id: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/console/api/queues/{name}/messages/{message_id}/delete".format(name=quote(str(name), safe=""),message_id=quote(str(message_id), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleError | ConsoleOk | None:
    if response.status_code == 200:
        response_200 = ConsoleOk.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleError | ConsoleOk]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    message_id: str,
    *,
    client: AuthenticatedClient,

) -> Response[ConsoleError | ConsoleOk]:
    """ Delete one message by id wherever it is (a Disque job id on a Disque queue)

    Args:
        name (str):
        message_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleOk]
     """


    kwargs = _get_kwargs(
        name=name,
message_id=message_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    message_id: str,
    *,
    client: AuthenticatedClient,

) -> ConsoleError | ConsoleOk | None:
    """ Delete one message by id wherever it is (a Disque job id on a Disque queue)

    Args:
        name (str):
        message_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleOk
     """


    return sync_detailed(
        name=name,
message_id=message_id,
client=client,

    ).parsed

async def asyncio_detailed(
    name: str,
    message_id: str,
    *,
    client: AuthenticatedClient,

) -> Response[ConsoleError | ConsoleOk]:
    """ Delete one message by id wherever it is (a Disque job id on a Disque queue)

    Args:
        name (str):
        message_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleOk]
     """


    kwargs = _get_kwargs(
        name=name,
message_id=message_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    message_id: str,
    *,
    client: AuthenticatedClient,

) -> ConsoleError | ConsoleOk | None:
    """ Delete one message by id wherever it is (a Disque job id on a Disque queue)

    Args:
        name (str):
        message_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleOk
     """


    return (await asyncio_detailed(
        name=name,
message_id=message_id,
client=client,

    )).parsed
