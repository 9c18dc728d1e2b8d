from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.console_done import ConsoleDone
from ...models.console_error import ConsoleError
from ...models.console_visibility_body import ConsoleVisibilityBody
from typing import cast



def _get_kwargs(
    name: str,
    *,
    body: ConsoleVisibilityBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/console/api/queues/{name}/visibility".format(name=quote(str(name), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConsoleDone | ConsoleError | None:
    if response.status_code == 200:
        response_200 = ConsoleDone.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConsoleDone | ConsoleError]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: ConsoleVisibilityBody,

) -> Response[ConsoleDone | ConsoleError]:
    """ Set how long received messages stay claimed from now, by receipt (0: visible again now)

    Args:
        name (str):
        body (ConsoleVisibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleDone | ConsoleError]
     """


    kwargs = _get_kwargs(
        name=name,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    body: ConsoleVisibilityBody,

) -> ConsoleDone | ConsoleError | None:
    """ Set how long received messages stay claimed from now, by receipt (0: visible again now)

    Args:
        name (str):
        body (ConsoleVisibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleDone | ConsoleError
     """


    return sync_detailed(
        name=name,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: ConsoleVisibilityBody,

) -> Response[ConsoleDone | ConsoleError]:
    """ Set how long received messages stay claimed from now, by receipt (0: visible again now)

    Args:
        name (str):
        body (ConsoleVisibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsoleDone | ConsoleError]
     """


    kwargs = _get_kwargs(
        name=name,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    body: ConsoleVisibilityBody,

) -> ConsoleDone | ConsoleError | None:
    """ Set how long received messages stay claimed from now, by receipt (0: visible again now)

    Args:
        name (str):
        body (ConsoleVisibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsoleDone | ConsoleError
     """


    return (await asyncio_detailed(
        name=name,
client=client,
body=body,

    )).parsed
