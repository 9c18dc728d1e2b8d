"""``python -m spoolq.http.probe``: the container's liveness probe (``HEALTHCHECK`` in
``deploy/Containerfile``).

Asks ``/healthz`` on ``127.0.0.1`` (port 8480 unless ``--port``) and exits 0 on ``200``, 1 otherwise.
Over clear text first; when the port answers that it speaks HTTPS (``spoolq serve --certfile``,
:mod:`spoolq.access.tls`), over TLS without checking the certificate: the probe runs inside the
container, on loopback, and asks whether this service is alive, not who it is. (With
``--client-ca`` the probe has no client certificate: give the container a health command of
your own, e.g. ``curl --cert``.)
"""

from __future__ import annotations

import argparse
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

TIMEOUT_SECONDS = 4.0


def _status(url: str, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS, context=context) as r:
            return int(r.status), b""
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()
    except OSError:
        return 0, b""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spoolq.http.probe", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8480)
    p.add_argument("--path", default="/healthz")
    a = p.parse_args(argv)
    url = f"http://127.0.0.1:{a.port}{a.path}"
    status, body = _status(url)
    if status == 400 and b"speaks HTTPS" in body:
        unverified = ssl.create_default_context()
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        status, _ = _status("https" + url[len("http"):], unverified)
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
