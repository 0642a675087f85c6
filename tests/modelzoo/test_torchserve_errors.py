"""The TorchServe client turns every failure into one typed error that says whether a retry can help."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zoo.serving.base import ModelRef
from zoo.serving.torchserve import TorchServeBackend, TorchServeClient, TorchServeError
from zoo.types import BackendError

REF = ModelRef(1, "m", "sentiment-v1", "classification", Path("/nonexistent"))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket goes


@pytest.fixture
def failing_server():
    """A local HTTP server answering every request with the status set in `state["status"]`."""
    state = {"status": 503, "body": {"code": 503, "message": "no worker available"}}

    class Handler(BaseHTTPRequestHandler):
        def _reply(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = json.dumps(state["body"]).encode()
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _reply

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state, TorchServeClient(url, url, timeout=5)
    server.shutdown()
    server.server_close()


def test_a_down_torchserve_is_a_retryable_error():
    url = f"http://127.0.0.1:{closed_port()}"
    backend = TorchServeBackend(TorchServeClient(url, url, timeout=2), Path("/tmp"))
    with pytest.raises(BackendError) as err:
        backend.predict([REF], [{"text": "hello"}])
    assert isinstance(err.value, TorchServeError)
    assert err.value.retryable
    assert "unreachable" in str(err.value)


@pytest.mark.parametrize(("status", "retryable"), [(503, True), (429, True), (504, True), (500, False), (400, False)])
def test_a_failing_torchserve_says_whether_a_retry_can_help(failing_server, status, retryable):
    state, client = failing_server
    state["status"] = status
    with pytest.raises(TorchServeError) as err:
        client.predict("sentiment-v1", [{"text": "hello"}])
    assert err.value.retryable is retryable
    assert err.value.status == status


def test_a_malformed_answer_is_not_retryable(failing_server):
    state, client = failing_server
    state["status"], state["body"] = 200, {"predictions": []}
    with pytest.raises(TorchServeError) as err:
        client.predict("sentiment-v1", [{"text": "hello"}])
    assert not err.value.retryable


def test_ping_on_a_down_server_is_false_not_an_exception():
    url = f"http://127.0.0.1:{closed_port()}"
    assert TorchServeClient(url, url).ping() is False


def test_a_model_torchserve_does_not_know_is_a_retryable_error_and_is_not_registered(failing_server):
    state, client = failing_server
    state["status"], state["body"] = 200, {"models": [{"modelName": "other-ens-7-8", "modelUrl": "other-ens-7-8"}]}
    backend = TorchServeBackend(client, Path("/nonexistent"))
    with pytest.raises(TorchServeError) as err:
        backend.predict([REF], [{"text": "hello"}])
    assert err.value.retryable
    assert "torchserve_register" in str(err.value)


def test_deploying_while_torchserve_is_down_leaves_registration_to_its_start(caplog):
    url = f"http://127.0.0.1:{closed_port()}"
    backend = TorchServeBackend(TorchServeClient(url, url, timeout=2), Path("/nonexistent"))
    backend.prepare([REF])  # no exception: `manage.py torchserve_register` registers it when TorchServe starts
    assert "will be registered when it starts" in caplog.text


def test_ensemble_names_carry_the_task_and_the_member_ids_in_order():
    from zoo.serving.torchserve import ensemble_ids, ensemble_name

    refs = [ModelRef(i, f"m{i}", f"hate-speech-v{i}", "classification", Path("/x")) for i in (12, 4, 9)]
    assert ensemble_name(refs) == "hate-speech-ens-12-4-9"
    assert ensemble_ids("hate-speech-ens-12-4-9") == [12, 4, 9]
    assert ensemble_ids("sentiment-v3") is None


def test_with_token_auth_on_each_api_gets_its_key_from_torchserve_s_key_file(tmp_path):
    """Compose keeps TorchServe's token auth on: the client reads key_file.json (re-read when it changes)."""
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Authorization")))
            data = json.dumps({"status": "Healthy", "models": []}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    inference, management = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    keys = tmp_path / "key_file.json"
    keys.write_text(json.dumps({"management": {"key": "M1"}, "inference": {"key": "I1"}, "API": {"key": "A1"}}))
    try:
        client = TorchServeClient(inference, management, timeout=5, key_file=keys)
        assert client.ping()
        client.request("GET", f"{management}/models")
        assert seen == [("/ping", "Bearer I1"), ("/models", "Bearer M1")]
        with pytest.raises(TorchServeError, match="key file"):
            TorchServeClient(inference, management, key_file=tmp_path / "missing.json").request("GET", f"{management}/models")
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
