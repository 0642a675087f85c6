"""Serve the packaged model over HTTP, OpenAI-compatible (llama.cpp's server through `xllamacpp`), for the HTTP
provider: `python -m zoo.llm.server --port 8089` serves until stopped, at http://127.0.0.1:8089/v1 (model name:
any; the server has one). Tests start one on a free port (`start()`), and so can a deployment without a GPU box.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from zoo.llm.base import ProviderError
from zoo.llm.local import SHA256, check_file, packaged_file

MODEL = "smollm2-135m-instruct"


@dataclass
class Running:
    server: Any
    base_url: str  # ends in /v1
    model: str = MODEL

    def stop(self) -> None:
        self.server = None  # the engine stops when it is collected

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(gguf_path: str | Path | None = None, host: str = "127.0.0.1", port: int = 0, threads: int = 1,
          ctx: int = 2048, slots: int = 2, wait_s: float = 60.0) -> Running:
    """Start llama.cpp's server for the model (the packaged one by default, its hash checked) and wait until its
    /health answers ok."""
    import xllamacpp as xlc

    path = Path(gguf_path) if gguf_path else packaged_file()
    check_file(path, SHA256 if gguf_path is None else None)
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.model_alias = MODEL
    params.n_parallel = slots
    params.n_ctx = ctx * slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = [host]
    params.port = port
    params.verbosity = 0
    server = xlc.Server(params)
    address = str(server.listening_address).rstrip("/")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if requests.get(f"{address}/health", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            raise ProviderError(f"the model server at {address} did not become healthy within {wait_s:g} s",
                                kind="down")
        time.sleep(0.2)
    return Running(server=server, base_url=f"{address}/v1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default=None, help="a GGUF file (default: the packaged SmolLM2-135M-Instruct)")
    args = parser.parse_args(argv)
    running = start(args.model, args.host, args.port, args.threads)
    print(f"serving {running.model} at {running.base_url} (Ctrl-C to stop)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    running.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
