"""Register every open round's deployed ensemble on TorchServe (run it each time TorchServe starts).

Idempotent: an ensemble already registered is left as it is (a 409 from TorchServe counts as success), an
archive already built is reused. One TorchServe model per ensemble; see docs/modelzoo.md, "Serving".
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from modelzoo import registration
from modelzoo.serving import get_backend


class Command(BaseCommand):
    help = "Register the deployed ensemble of every open round on TorchServe (idempotent; run at TorchServe start)."

    def add_arguments(self, parser):
        parser.add_argument("--wait", type=float, default=120.0,
                            help="seconds to wait for TorchServe to answer its ping first (default 120)")
        parser.add_argument("--prune", action="store_true",
                            help="also unregister ensemble models that no open round uses any more")

    def handle(self, *args, **o):
        backend = get_backend("torchserve")  # this command's own backend, whatever MODEL_BACKEND says
        if not backend.client.wait_healthy(o["wait"]):
            raise CommandError(f"TorchServe is not answering at {backend.client.inference_url} after {o['wait']:.0f} s")
        started = time.perf_counter()
        done, failed = registration.register_open_rounds(backend)
        for r in done:
            self.stdout.write(f"{r.round}: {r.model} ({', '.join(r.members)}) ready")
        if not done and not failed:
            self.stdout.write("no open round has a deployed ensemble; nothing to register")
        if o["prune"] and not failed:
            for name in registration.prune({r.model for r in done}, backend):
                self.stdout.write(f"unregistered {name} (no open round uses it)")
        for label, exc in failed:
            self.stderr.write(f"{label}: {exc}")
        if failed:
            raise CommandError(f"{len(failed)} ensemble(s) could not be registered")
        self.stdout.write(self.style.SUCCESS(f"{len(done)} ensemble(s) registered in {time.perf_counter() - started:.1f} s"))
