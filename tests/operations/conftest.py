"""Real destinations on loopback for the alert tests: an SMTP server (aiosmtpd) and an HTTP receiver
(``http.server`` in a thread), each recording what arrived; and a closed port for a dead destination."""

from __future__ import annotations

import json
import threading
from email import message_from_bytes
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller
from daemon_helpers import free_port


class _Mailbox:
    """aiosmtpd handler: keeps every message as ``(subject, body text, recipients)``."""

    def __init__(self):
        self.messages: list[dict] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = message_from_bytes(envelope.original_content or envelope.content, policy=default_policy)
        part = message.get_body(preferencelist=("plain", "html"))
        with self.lock:
            self.messages.append({"subject": str(message["subject"]), "body": part.get_content(),
                                  "to": list(envelope.rcpt_tos)})
        return "250 OK"


@pytest.fixture
def smtp_server():
    """``(mailbox, mailto URL)``: plain SMTP on a loopback port, no TLS, no login."""
    mailbox = _Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, (f"mailto://127.0.0.1:{port}?mode=insecure&from=rank-pipeline@example.com"
                        f"&to=seo-team@example.com")
    finally:
        controller.stop()


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's hook name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.bodies.append({"path": self.path, "json": json.loads(body)})
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def http_receiver():
    """``(bodies, json URL)``: an HTTP server on loopback recording each POSTed JSON body."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.bodies = []
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.bodies, f"json://127.0.0.1:{server.server_address[1]}/hooks/rank-alerts"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dead_url():
    """A ``json://`` URL on a loopback port nothing listens on."""
    return f"json://127.0.0.1:{free_port()}/nobody"
