"""Test certificates made per run with trustme (a test CA, a server certificate for 127.0.0.1 and
localhost, a client certificate): nothing secret is kept in the repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme


@dataclass(frozen=True)
class Pki:
    ca: Path  # the test CA's certificate: what clients trust (boto3 verify=, curl --cacert, ...)
    cert: Path  # the server's certificate chain
    key: Path  # its private key
    client: Path  # a client certificate signed by the same CA, with its key (one PEM file)
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed nothing here
    other_key: Path  # a private key that matches no certificate here
    other_client: Path  # a client certificate (with its key) signed by the other CA


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("worker@spoolq.test")
    other = trustme.CA()
    stray = other.issue_cert("stray@other.test")
    pki = Pki(ca=directory / "ca.pem", cert=directory / "server.pem", key=directory / "server.key",
              client=directory / "client.pem", client_cert=directory / "client.crt",
              client_key=directory / "client.key", other_ca=directory / "other-ca.pem",
              other_key=directory / "other.key", other_client=directory / "other-client.pem")
    ca.cert_pem.write_to_path(str(pki.ca))
    for i, blob in enumerate(server.cert_chain_pems):
        blob.write_to_path(str(pki.cert), append=i > 0)
    server.private_key_pem.write_to_path(str(pki.key))
    client.private_key_and_cert_chain_pem.write_to_path(str(pki.client))
    client.cert_chain_pems[0].write_to_path(str(pki.client_cert))
    client.private_key_pem.write_to_path(str(pki.client_key))
    other.cert_pem.write_to_path(str(pki.other_ca))
    stray.private_key_pem.write_to_path(str(pki.other_key))
    stray.private_key_and_cert_chain_pem.write_to_path(str(pki.other_client))
    for key in (pki.key, pki.client, pki.client_key, pki.other_key, pki.other_client):
        key.chmod(0o600)
    return pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))
