from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.json_error import JsonError
from ...models.not_authorized import NotAuthorized
from ...models.queue_settings import QueueSettings
from ...models.unavailable import Unavailable
from typing import cast



def _get_kwargs(
    queue: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/dedupq/1/{queue}/_settings".format(queue=quote(str(queue), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JsonError | NotAuthorized | QueueSettings | Unavailable | str | None:
    if response.status_code == 200:
        response_200 = QueueSettings.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = response.text
        return response_400

    if response.status_code == 403:
        response_403 = NotAuthorized.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = JsonError.from_dict(response.json())



        return response_404

    if response.status_code == 503:
        response_503 = Unavailable.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[JsonError | NotAuthorized | QueueSettings | Unavailable | str]:
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

) -> Response[JsonError | NotAuthorized | QueueSettings | Unavailable | str]:
    """ A queue's settings (spoolq extension)

    Args:
        queue (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JsonError | NotAuthorized | QueueSettings | Unavailable | str]
     """


    kwargs = _get_kwargs(
        queue=queue,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    queue: str,
    *,
    client: AuthenticatedClient,

) -> JsonError | NotAuthorized | QueueSettings | Unavailable | str | None:
    """ A queue's settings (spoolq extension)

    Args:
        queue (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JsonError | NotAuthorized | QueueSettings | Unavailable | str
     """


    return sync_detailed(
        queue=queue,
client=client,

    ).parsed

async def asyncio_detailed(
    queue: str,
    *,
    client: AuthenticatedClient,

) -> Response[JsonError | NotAuthorized | QueueSettings | Unavailable | str]:
    """ A queue's settings (spoolq extension)

    Args:
        queue (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JsonError | NotAuthorized | QueueSettings | Unavailable | str]
     """


    kwargs = _get_kwargs(
        queue=queue,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    queue: str,
    *,
    client: AuthenticatedClient,

) -> JsonError | NotAuthorized | QueueSettings | Unavailable | str | None:
    """ A queue's settings (spoolq extension)

    Args:
        queue (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JsonError | NotAuthorized | QueueSettings | Unavailable | str
     """


    return (await asyncio_detailed(
        queue=queue,
client=client,

    )).parsed
