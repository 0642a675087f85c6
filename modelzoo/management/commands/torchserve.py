"""Start or stop TorchServe on this machine for the model zoo, then register the open rounds' ensembles.

    manage.py torchserve start      # in the background; returns once it answers and the ensembles are READY
    manage.py torchserve run        # in the foreground (a process supervisor, `make serve-prod`); Ctrl-C stops it
    manage.py torchserve stop

Ports come from TORCHSERVE_URL and TORCHSERVE_MANAGEMENT_URL (metrics and gRPC: --metrics-port,
--grpc-ports); every listener is bound to 127.0.0.1 (torchserve/config.properties); archives are read from
MODEL_STORE/torchserve; config, logs and the pid file live in --workdir (default VAR_DIR/torchserve).
Token auth is off: the listeners are loopback-only. Only one TorchServe per host (its worker sockets are
fixed names in the system temp folder).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from zoo.torchserve_ctl import LocalTorchServe


class Command(BaseCommand):
    help = "Start (background or foreground) or stop TorchServe, registering every open round's ensemble at start."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["start", "run", "stop"])
        parser.add_argument("--workdir", default=None, help="config, logs, pid file (default VAR_DIR/torchserve)")
        parser.add_argument("--metrics-port", type=int, default=None, help="default: the management port + 1")
        parser.add_argument("--grpc-ports", type=int, nargs=2, default=None, metavar=("INFERENCE", "MANAGEMENT"),
                            help="default: the inference port - 1010 and - 1009 (7070, 7071 for 8080)")
        parser.add_argument("--no-register", action="store_true", help="start without registering the ensembles")

    def handle(self, *args, **o):
        server = self.server(o)
        if o["action"] == "stop":
            server.stop()
            self.stdout.write("TorchServe stopped")
            return
        if o["action"] == "start":
            if server.client().ping():
                self.stdout.write(f"TorchServe already answers at {server.inference_url}")
            else:
                server.start(timeout_s=180)
                self.stdout.write(f"TorchServe started at {server.inference_url} (log: {server.log_file})")
            self.register(o)
            return
        self.run_foreground(server, o)

    def server(self, o) -> LocalTorchServe:
        inference, management = urlparse(settings.TORCHSERVE_URL), urlparse(settings.TORCHSERVE_MANAGEMENT_URL)
        if inference.hostname not in ("127.0.0.1", "localhost") or management.hostname not in ("127.0.0.1", "localhost"):
            raise CommandError("this command starts TorchServe on this host: TORCHSERVE_URL and "
                               "TORCHSERVE_MANAGEMENT_URL must point at 127.0.0.1")
        i_port, m_port = inference.port or 80, management.port or 80
        grpc = o["grpc_ports"] or [i_port - 1010, i_port - 1009]
        workdir = Path(o["workdir"]) if o["workdir"] else Path(settings.VAR_DIR) / "torchserve"
        return LocalTorchServe(workdir, Path(settings.MODEL_STORE) / "torchserve", i_port, m_port,
                               o["metrics_port"] or m_port + 1, *grpc)

    def register(self, o) -> None:
        if not o["no_register"]:
            call_command("torchserve_register", wait=180, stdout=self.stdout, stderr=self.stderr)

    def run_foreground(self, server: LocalTorchServe, o) -> None:
        process = subprocess.Popen(server.command(foreground=True), stdin=subprocess.DEVNULL, env=server.env(),
                                   cwd=server.workdir)

        def stop(signum, _frame):
            process.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            self.register(o)
        except CommandError as exc:  # TorchServe keeps serving what it has; the operator sees why
            self.stderr.write(f"registration failed: {exc}")
        sys.exit(process.wait())
