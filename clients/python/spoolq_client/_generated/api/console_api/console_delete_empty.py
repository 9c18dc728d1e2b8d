from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_delete_empty import ConsoleDeleteEmpty
from ...models.console_delete_empty_body import ConsoleDeleteEmptyBody
from ...models.console_error import ConsoleError
from typing import cast



def _get_kwargs(
    *,
    body: ConsoleDeleteEmptyBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/console/api/queues/delete-empty",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleDeleteEmpty | ConsoleError | None:
    if response.status_code == 200:
        response_200 = ConsoleDeleteEmpty.from_dict(response.json())



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

    if response.status_code == 503:
        response_503 = ConsoleError.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleDeleteEmpty | ConsoleError]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ConsoleDeleteEmptyBody,

) -> Response[ConsoleDeleteEmpty | ConsoleError]:
    """ Delete each named queue that holds no message (every one authorised first)

    Args:
        body (ConsoleDeleteEmptyBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleDeleteEmpty | ConsoleError]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: ConsoleDeleteEmptyBody,

) -> ConsoleDeleteEmpty | ConsoleError | None:
    """ Delete each named queue that holds no message (every one authorised first)

    Args:
        body (ConsoleDeleteEmptyBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleDeleteEmpty | ConsoleError
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ConsoleDeleteEmptyBody,

) -> Response[ConsoleDeleteEmpty | ConsoleError]:
    """ Delete each named queue that holds no message (every one authorised first)

    Args:
        body (ConsoleDeleteEmptyBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleDeleteEmpty | ConsoleError]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ConsoleDeleteEmptyBody,

) -> ConsoleDeleteEmpty | ConsoleError | None:
    """ Delete each named queue that holds no message (every one authorised first)

    Args:
        body (ConsoleDeleteEmptyBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleDeleteEmpty | ConsoleError
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
