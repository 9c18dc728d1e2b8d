from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_create_body import ConsoleCreateBody
from ...models.console_created import ConsoleCreated
from ...models.console_error import ConsoleError
from typing import cast



def _get_kwargs(
    *,
    body: ConsoleCreateBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/console/api/queues",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleCreated | ConsoleError | None:
    if response.status_code == 200:
        response_200 = ConsoleCreated.from_dict(response.json())



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

    if response.status_code == 409:
        response_409 = ConsoleError.from_dict(response.json())



        return response_409

    if response.status_code == 503:
        response_503 = ConsoleError.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleCreated | ConsoleError]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ConsoleCreateBody,

) -> Response[ConsoleCreated | ConsoleError]:
    """ Create a queue of any door (its door's name rule and permission: post, admin for SQS)

    Args:
        body (ConsoleCreateBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleCreated | ConsoleError]
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
    body: ConsoleCreateBody,

) -> ConsoleCreated | ConsoleError | None:
    """ Create a queue of any door (its door's name rule and permission: post, admin for SQS)

    Args:
        body (ConsoleCreateBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleCreated | ConsoleError
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ConsoleCreateBody,

) -> Response[ConsoleCreated | ConsoleError]:
    """ Create a queue of any door (its door's name rule and permission: post, admin for SQS)

    Args:
        body (ConsoleCreateBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleCreated | ConsoleError]
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
    body: ConsoleCreateBody,

) -> ConsoleCreated | ConsoleError | None:
    """ Create a queue of any door (its door's name rule and permission: post, admin for SQS)

    Args:
        body (ConsoleCreateBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleCreated | ConsoleError
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
