"""The TLS flags ``spoolq serve`` and ``spoolq check-config`` share (:mod:`spoolq.access.tls`)."""

from __future__ import annotations

import argparse
from pathlib import Path

#: the settings these flags set
TLS_SETTINGS = ("certfile", "keyfile", "client_ca", "disque_tls_port")


def add_tls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--certfile", type=Path,
                   help="TLS certificate chain (PEM, the server's certificate first): the HTTP port then "
                        "speaks only HTTPS")
    p.add_argument("--keyfile", type=Path, help="its private key (PEM, unencrypted; default: in --certfile)")
    p.add_argument("--client-ca", dest="client_ca", type=Path,
                   help="CA bundle (PEM): every client must present a certificate it signed (mutual TLS)")
    p.add_argument("--disque-tls-port", dest="disque_tls_port", type=int,
                   help="serve Disque over TLS on this port (needs --certfile; as Redis's tls-port)")
