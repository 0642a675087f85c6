"""Real HTTP servers on 127.0.0.1 that answer the way OpenAI-compatible endpoints (and the things an endpoint
address might point at instead) do, recording every request they get: path, Authorization header and body."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Endpoint(BaseHTTPRequestHandler):
    """A real HTTP server whose answer the test picks: `behaviour` on the server object (and `status`, `text`,
    `location` for the behaviours that use them)."""

    def log_message(self, *args):  # quiet
        pass

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.seen.append({"method": self.command, "path": self.path,
                                 "authorization": self.headers.get("Authorization"),
                                 "body": json.loads(raw) if raw else None})

    def do_GET(self):
        self._record()
        self._answer()

    def do_POST(self):
        self._record()
        self._answer()

    def _answer(self):
        behaviour = self.server.behaviour
        if behaviour == "slow":
            time.sleep(1.5)
            return self._send(200, {"choices": [{"message": {"content": "late"}}]})
        if behaviour == "quota":
            return self._send(429, {"error": {"message": "rate limit"}}, {"Retry-After": "0"})
        if behaviour == "garbage":
            raw = b"<html>a proxy error page</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return None
        if behaviour == "no_logprobs":
            return self._send(200, {"choices": [{"message": {"content": "positive"}}]})
        if behaviour == "bad_key":
            return self._send(401, {"error": {"message": "invalid api key"}})
        if behaviour == "status":  # an internal service answering what it answers
            return self._send(self.server.status, {"error": {"message": self.server.text}})
        if behaviour == "redirect":
            self.send_response(self.server.status)
            self.send_header("Location", self.server.location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self._send(200, {"choices": [{"message": {"content": "A fine answer."}}],
                                "usage": {"prompt_tokens": 12, "completion_tokens": 4}})

    def _send(self, code: int, payload: dict, headers: dict | None = None):
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def serve() -> Iterator[Callable[..., ThreadingHTTPServer]]:
    """Start a recording server: `serve(behaviour="ok", **attributes)`; all are stopped after the test."""
    started: list[ThreadingHTTPServer] = []

    def start(behaviour: str = "ok", **attributes) -> ThreadingHTTPServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
        httpd.behaviour = behaviour
        httpd.seen = []
        for name, value in attributes.items():
            setattr(httpd, name, value)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return httpd

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def endpoint(serve) -> ThreadingHTTPServer:
    return serve()


def url_of(httpd, host: str = "127.0.0.1") -> str:
    """The server's base URL (…/v1), with the host spelt as the test wants."""
    return f"http://{host}:{httpd.server_address[1]}/v1"
