"""Start and stop a local TorchServe (tests, benchmarks, `manage.py torchserve start|stop|run`).

Traps handled here (see STACK-NOTES): output goes to a log file, never a pipe (the java child keeps a pipe
open forever); the pid file lives in $TMPDIR, so start and stop share one TMPDIR; every listener is bound to
127.0.0.1; token auth is off only for local use (`--disable-token-auth`). GPUs: `number_of_gpu` is every CUDA
device torch sees (none with ZOO_DEVICE=cpu, or `gpus=`), and TorchServe gives each worker one of them
(`gpu_id`), which the handler computes on (torchserve/handler.py).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zoo.serving.torchserve import TorchServeClient, TorchServeError

TEMPLATE = Path(__file__).resolve().parent.parent / "torchserve" / "config.properties"


@dataclass
class LocalTorchServe:
    workdir: Path  # config, logs, pid file (TMPDIR) live here
    model_store: Path
    inference_port: int = 8080
    management_port: int = 8081
    metrics_port: int = 8082
    grpc_inference_port: int = 7070
    grpc_management_port: int = 7071
    extra: dict[str, str] = field(default_factory=dict)
    gpus: int | None = None  # GPUs TorchServe hands its workers (`gpu_id`); None: `gpu_count()`

    def gpu_count(self) -> int:
        """The GPUs this TorchServe may give its workers: `gpus` when set; else none with ZOO_DEVICE=cpu, and
        every CUDA device torch sees otherwise (none on a CPU-only host: the config's number_of_gpu=0 holds)."""
        if self.gpus is not None:
            return self.gpus
        from zoo import device

        if device.asked() == "cpu":
            return 0
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0

    @property
    def inference_url(self) -> str:
        return f"http://127.0.0.1:{self.inference_port}"

    @property
    def management_url(self) -> str:
        return f"http://127.0.0.1:{self.management_port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "torchserve.log"

    def client(self) -> TorchServeClient:
        return TorchServeClient(self.inference_url, self.management_url)

    def config_text(self) -> str:
        values = {
            "inference_address": self.inference_url, "management_address": self.management_url,
            "metrics_address": f"http://127.0.0.1:{self.metrics_port}",
            "grpc_inference_port": str(self.grpc_inference_port), "grpc_management_port": str(self.grpc_management_port),
            "model_store": str(self.model_store), "number_of_gpu": str(self.gpu_count()), **self.extra,
        }
        text = TEMPLATE.read_text(encoding="utf-8")
        for key, value in values.items():
            line = f"{key}={value}"
            text, found = re.subn(rf"^{re.escape(key)}=.*$", line, text, flags=re.M)
            if not found:
                text += f"{line}\n"
        return text

    def env(self) -> dict[str, str]:
        tmp = self.workdir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        # MALLOC_ARENA_MAX: a worker runs its members in threads, and each glibc arena keeps freed memory
        # (the handler also sets it with mallopt, whoever starts TorchServe).
        return {"MALLOC_ARENA_MAX": "2", **os.environ, "TMPDIR": str(tmp), "LOG_LOCATION": str(self.workdir / "logs"),
                "METRICS_LOCATION": str(self.workdir / "logs"), "TS_CONFIG_FILE": str(self.workdir / "config.properties")}

    def command(self, foreground: bool = False) -> list[str]:
        """Write the config file and return the command line that starts TorchServe with it."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.model_store.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "config.properties"
        config.write_text(self.config_text(), encoding="utf-8")
        return [torchserve_bin(), "--start", *(["--foreground"] if foreground else []), "--ncs", "--disable-token-auth",
                "--model-store", str(self.model_store), "--ts-config", str(config)]

    def start(self, timeout_s: float = 90.0) -> TorchServeClient:
        command = self.command()
        with open(self.log_file, "ab") as log:
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env(), cwd=self.workdir, start_new_session=True)
        client = self.client()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if client.ping():
                return client
            time.sleep(0.3)
        self.stop()
        raise TorchServeError(f"TorchServe did not become healthy in {timeout_s:.0f} s; see {self.log_file}", retryable=True)

    def stop(self) -> None:
        with open(self.log_file, "ab") as log:
            subprocess.run([torchserve_bin(), "--stop"], stdout=log, stderr=subprocess.STDOUT, env=self.env(),
                           cwd=self.workdir, timeout=60, check=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.client().ping():
            time.sleep(0.3)


def free_ports(n: int) -> list[int]:
    """n distinct ports that were free on 127.0.0.1 a moment ago."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def torchserve_bin() -> str:
    local = Path(sys.executable).parent / "torchserve"
    found = str(local) if local.exists() else shutil.which("torchserve")
    if not found:
        raise TorchServeError("torchserve is not installed", retryable=False)
    return found
