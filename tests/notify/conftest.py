"""Real components for the notification tests: an HTTP server in a thread receiving webhooks (it verifies each
signature itself, with the Standard Webhooks algorithm written out here, independent of the code under test), and a
real SMTP server (aiosmtpd) on a free port, with the site's EMAIL_* settings pointed at it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import threading
import time
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def spec_signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """The Standard Webhooks signature, from the spec: HMAC-SHA256 of '{id}.{timestamp}.{body}', keyed with the
    base64-decoded part of 'whsec_<base64>', written as 'v1,<base64>'."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


@dataclass
class Received:
    at: float
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What the server answers (`script`: one status code per request, the last repeated; `delay`: seconds before
    answering) and what it got."""

    url: str = ""
    script: list[int] = field(default_factory=lambda: [200])
    delay: float = 0.0
    redirect_to: str = ""
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_status(self) -> int:
        with self.lock:
            index = min(len(self.requests), len(self.script)) - 1
            return self.script[max(0, index)]

    def verified(self, secret: str, got: Received) -> bool:
        signatures = got.headers.get("webhook-signature", "").split(" ")
        expected = spec_signature(secret, got.headers["webhook-id"], got.headers["webhook-timestamp"], got.body)
        return any(hmac.compare_digest(s, expected) for s in signatures)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.requests


@pytest.fixture
def receiver():
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with state.lock:
                state.requests.append(Received(time.monotonic(), self.path, {k.lower(): v for k, v in
                                                                             self.headers.items()}, body))
            status = state.next_status()
            if state.delay:
                time.sleep(state.delay)
            try:
                self.send_response(status)
                if state.redirect_to:
                    self.send_header("Location", state.redirect_to)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"no")
            except (BrokenPipeError, ConnectionResetError):  # the sender gave up waiting (a timeout test)
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/in"
    yield state
    server.shutdown()
    server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Mailbox:
    messages: list = field(default_factory=list)  # (envelope recipients, parsed message)

    def wait_for(self, count: int, timeout: float = 10.0) -> list:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server (aiosmtpd) on a free local port; the site's mail settings point at it."""
    from aiosmtpd.controller import Controller

    box = Mailbox()

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
            box.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content, policy=policy.default)))
            return "250 Message accepted for delivery"

    port = free_port()
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_TIMEOUT = 5
    settings.DEFAULT_FROM_EMAIL = "dynabench@example.org"
    box.port = port
    yield box
    controller.stop()


@pytest.fixture
def notify_settings(settings):
    """Webhooks may reach this machine (the receiver), waits are short, and jobs run in the caller (unit tests)."""
    settings.NOTIFY_ALLOW_PRIVATE = True
    settings.NOTIFY_TIMEOUT_SECONDS = 2.0
    settings.NOTIFY_RETRY_BASE_SECONDS = 0.2
    settings.NOTIFY_RETRY_MAX_SECONDS = 0.3
    settings.NOTIFY_MAX_ATTEMPTS = 3
    settings.NOTIFY_DISABLE_AFTER = 2
    settings.JOB_RUNNER = "inline"
    return settings
