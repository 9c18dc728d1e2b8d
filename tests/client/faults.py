"""A small fault-injecting HTTP proxy on 127.0.0.1 in front of a real spoolq.

``FaultProxy(upstream, plan)``: for the n-th request (1-based), ``plan(n, method, path)`` says
what to do: ``"pass"`` forwards it; ``"503"`` answers 503 with ``Retry-After`` without forwarding
(spoolq's own shape: nothing stored); ``"drop"`` forwards it, then closes the connection without
answering (the request was applied but the client never learns it: the ambiguous case); ``"json:<body>"``
answers 200 with that JSON body without forwarding (a canned reply).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

Plan = Callable[[int, str, str], str]


class FaultProxy:
    def __init__(self, upstream: str, plan: Plan, retry_after: str = "1") -> None:
        self.upstream = upstream
        self.plan = plan
        self.retry_after = retry_after
        self.count = 0
        self.actions: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(base_url=upstream, timeout=30)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.count += 1
                    n = proxy.count
                action = proxy.plan(n, self.command, self.path)
                proxy.actions.append((action, self.command, self.path))
                if action == "503":
                    payload = b'{"message":"injected: storage unavailable","retryAfterSeconds":1,"suppressed":[]}'
                    self.send_response(503)
                    self.send_header("Retry-After", proxy.retry_after)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if action.startswith("json:"):
                    canned = action[5:].encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(canned)))
                    self.end_headers()
                    self.wfile.write(canned)
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                r = proxy._http.request(self.command, self.path, content=body, headers=headers)
                if action == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._http.close()
