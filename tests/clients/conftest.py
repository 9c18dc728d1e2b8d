"""Fixtures of the clients tier: the Java reactor built once per session, a directory for Go
binaries, and the identities the servers are started with (see programs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.programs import JavaProgram, build_java

#: identities of the servers the programs run against: one that may do everything (an EmoDB API
#: key and SigV4 keys), one that may only read queues' status, one with no permission at all
IDENTITIES: dict[str, Any] = {
    "api_keys": [
        {"name": "client", "key": "k-client",
         "sqs_credentials": [{"access_key_id": "AKIACLIENT000001", "secret_access_key": "client-secret-0001"}],
         "permissions": ["queue|*|*"]},
        {"name": "reader", "key": "k-reader",
         "sqs_credentials": [{"access_key_id": "AKIAREADER000001", "secret_access_key": "reader-secret-0001"}],
         "permissions": ["queue|get_status|*"]},
        {"name": "nobody", "key": "k-nobody", "permissions": []},
    ],
}

#: what the SQS programs read to sign as those identities
SQS_ENV = {"SQS_ACCESS_KEY": "AKIACLIENT000001", "SQS_SECRET_KEY": "client-secret-0001",
           "SQS_READER_KEY": "AKIAREADER000001", "SQS_READER_SECRET": "reader-secret-0001"}


@pytest.fixture(scope="session")
def java_programs() -> dict[str, JavaProgram]:
    return build_java()


@pytest.fixture(scope="session")
def go_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go-clients")
