"""Raw-socket HTTP for hostile-input tests: send exactly the bytes given, read one response."""

from __future__ import annotations

import http.client
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    headers: dict[str, str]
    body: bytes

    @property
    def html(self) -> bool:
        return "html" in self.content_type.lower() or b"<html" in self.body[:2000].lower() \
            or b"<!doctype html" in self.body[:2000].lower()


def exchange(port: int, raw: bytes, *, timeout: float = 20.0, half_close: bool = False) -> Reply | None:
    """Send ``raw`` to 127.0.0.1:``port`` and parse one response (``None`` if the server closed silently)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(raw)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer (413, 400) and close before reading everything
        resp = http.client.HTTPResponse(sock)
        try:
            resp.begin()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            return None
        try:
            body = resp.read()
        except (http.client.IncompleteRead, ConnectionResetError) as e:
            body = getattr(e, "partial", b"") or b""
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return Reply(resp.status, headers.get("content-type", ""), headers, body)


def chunked(body: bytes, size: int = 8192) -> bytes:
    """``body`` in Transfer-Encoding: chunked framing."""
    out = bytearray()
    for i in range(0, len(body), size):
        piece = body[i:i + size]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    return bytes(out + b"0\r\n\r\n")


def request(method: str, path: str, headers: dict[str, str], body: bytes = b"", *, chunk: bool = False) -> bytes:
    """A well-formed HTTP/1.1 request (``Connection: close``), chunked or with Content-Length."""
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    if chunk:
        head.append("Transfer-Encoding: chunked")
        payload = chunked(body)
    else:
        head.append(f"Content-Length: {len(body)}")
        payload = body
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload
