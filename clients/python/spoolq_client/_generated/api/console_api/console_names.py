from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_error import ConsoleError
from ...models.console_resolved import ConsoleResolved
from typing import cast



def _get_kwargs(
    *,
    name: str,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["name"] = name


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/console/api/names",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleError | ConsoleResolved | None:
    if response.status_code == 200:
        response_200 = ConsoleResolved.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ConsoleError.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ConsoleError.from_dict(response.json())



        return response_401

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleError | ConsoleResolved]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    name: str,

) -> Response[ConsoleError | ConsoleResolved]:
    """ The queues a name as users type it stands for (its door's name, store name or SQS queue URL)

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleResolved]
     """


    kwargs = _get_kwargs(
        name=name,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    name: str,

) -> ConsoleError | ConsoleResolved | None:
    """ The queues a name as users type it stands for (its door's name, store name or SQS queue URL)

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleResolved
     """


    return sync_detailed(
        client=client,
name=name,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    name: str,

) -> Response[ConsoleError | ConsoleResolved]:
    """ The queues a name as users type it stands for (its door's name, store name or SQS queue URL)

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleError | ConsoleResolved]
     """


    kwargs = _get_kwargs(
        name=name,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    name: str,

) -> ConsoleError | ConsoleResolved | None:
    """ The queues a name as users type it stands for (its door's name, store name or SQS queue URL)

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleError | ConsoleResolved
     """


    return (await asyncio_detailed(
        client=client,
name=name,

    )).parsed
