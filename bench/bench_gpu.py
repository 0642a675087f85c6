#!/usr/bin/env python
"""GPU benchmark (issue 40, Goals): the platform's training and serving paths against bare PyTorch on one NVIDIA GPU.

    python bench/bench_gpu.py                       # on a machine with a CUDA build of torch and one GPU
    python bench/bench_gpu.py --device cpu --smoke  # tiny configs, a few steps: proves the script before a GPU

It imports the library alone (zoo, torch, transformers; no Django), installs nothing, downloads nothing (randomly
initialised RoBERTa configurations, a tokenizer made in code by zoo.tiny), and is sized to finish in under 8
minutes on one H100-class card. Parts:

(a) round retraining, for RoBERTa-base and RoBERTa-large configurations: the platform's fit loop
    (`zoo.training.fit`, which places batches by the device policy `zoo.device` / ZOO_DEVICE and autocasts on a GPU)
    against a bare transformers/PyTorch loop on the same model, batch, sequence length and precision
    (AdamW, linear schedule, gradient clipping, `zoo.device.amp_dtype`), examples per second; goal >= 0.9x;
(b) serving: a 3-member RoBERTa-large ensemble through TorchServe on the GPU (`zoo.archive` builds the ensemble
    archive, `zoo.torchserve_ctl.LocalTorchServe` starts a local server with number_of_gpu=1 and ZOO_DEVICE=cuda)
    against a bare batched forward of the same three models on the same GPU: verdicts per second under
    `--concurrency` client threads, p50/p95 latency, GPU memory per member; goal >= 0.8x;
(c) the same ensemble through the in-process backend (`zoo.serving.inprocess.InProcessBackend`).

Without CUDA it refuses to run unless `--device cpu --smoke` is given. Writes <out>/gpu.json and <out>/gpu.md
(default out: var/bench/gpu); copy the figures into docs/benchmarks/gpu.md.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import inspect
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

LOCK = "/tmp/torchserve.lock"
LABELS = ["entailment", "neutral", "contradiction"]
SIZES = {  # RoBERTa configurations (randomly initialised: throughput only)
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
    "smoke": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
}
INPUTS = [  # serving load: NLI pairs of ordinary length
    {"text": "A man in a blue jacket is playing a guitar on a crowded street corner while people walk past.",
     "text_pair": "Someone is making music outdoors."},
    {"text": "Two dogs run through the deep snow in a field beside a frozen lake at dawn.",
     "text_pair": "The animals are asleep indoors."},
    {"text": "A woman reads a newspaper at the station; the departure board above her shows several delays.",
     "text_pair": "She is waiting for a train."},
    {"text": "The committee postponed the vote after two members objected to the wording of the final clause.",
     "text_pair": "The vote took place as planned."},
]


def log(message: str) -> None:
    print(f"[bench_gpu] {message}", flush=True)


# -- set-up -------------------------------------------------------------------------------------------------------


def tokenizer():
    from zoo import tiny

    return tiny.tiny_tokenizer("roberta")


def config(size: str, vocab: int):
    from transformers import RobertaConfig

    return RobertaConfig(vocab_size=max(vocab, 1000) + 8, max_position_embeddings=514, type_vocab_size=1,
                         num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
                         label2id={label: i for i, label in enumerate(LABELS)}, **SIZES[size])


def model(size: str, vocab: int, seed: int):
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(seed)
    return AutoModelForSequenceClassification.from_config(config(size, vocab))


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def gpu_name(device) -> str:
    from zoo import device as zdevice

    described = zdevice.describe(device)
    return described.get("name", "cpu")


# -- (a) training -------------------------------------------------------------------------------------------------


def features(n: int, length: int, vocab: int, seed: int) -> list[dict]:
    """n fixed-length random token sequences with labels (what a head's `features` gives: ids, mask, labels)."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ids = [0] + [rng.randrange(5, vocab) for _ in range(length - 2)] + [2]
        out.append({"input_ids": ids, "attention_mask": [1] * length, "labels": rng.randrange(len(LABELS))})
    return out


def platform_fit(size: str, device, feats: list[dict], batch: int, warm: int, tok) -> dict:
    """zoo.training.fit on the device policy's device; examples/s over the steps after `warm`."""
    import torch

    from zoo import training

    spec = training.TrainSpec(head="classification", labels=LABELS, epochs=1, batch_size=batch, max_length=512,
                              warmup=0.1, encoder="tiny-roberta")
    net = model(size, len(tok), seed=0)
    params = inspect.signature(training.fit).parameters
    kwargs = {}
    if "device" in params:
        kwargs["device"] = device
    else:
        net = net.to(device)  # a fit without a device argument reads the device policy (ZOO_DEVICE) or the model's
    marks: dict[str, float] = {}

    def progress(step: int, total: int, _stats: dict) -> None:
        if step in (warm, total):  # fit may shrink the batch to fit the card (zoo.device.batch_size_for)
            sync(device)
            marks["warm" if step == warm else "end"] = time.perf_counter()
            marks["total"] = total

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    training.fit(net, tok, feats, spec, progress, **kwargs)
    total = int(marks["total"])
    used_batch = -(-len(feats) // total)
    rate = (total - warm) * used_batch / (marks["end"] - marks["warm"])
    where = str(next(net.parameters()).device)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    del net
    return {"examples_per_s": round(rate, 1), "model_on": where, "peak_gb": round(peak, 2) if peak else None,
            "fit_takes_device": "device" in params, "batch_used": used_batch}


def bare_loop(size: str, device, feats: list[dict], batch: int, warm: int, vocab: int) -> dict:
    """The same model, batch, length and precision, trained by a plain loop over pre-built tensors."""
    import torch

    from zoo import device as zdevice
    from zoo.training import linear_schedule

    net = model(size, vocab, seed=0).to(device)
    net.train()
    dtype = zdevice.amp_dtype(device)
    scaler = zdevice.grad_scaler(device, dtype)
    ids = torch.tensor([f["input_ids"] for f in feats])
    mask = torch.tensor([f["attention_mask"] for f in feats])
    labels = torch.tensor([f["labels"] for f in feats])
    steps = len(feats) // batch
    optimizer = torch.optim.AdamW(net.parameters(), lr=5e-5, weight_decay=0.01)
    scheduler = linear_schedule(optimizer, int(steps * 0.1), steps)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started = None
    for step in range(steps):
        if step == warm:
            sync(device)
            started = time.perf_counter()
        sl = slice(step * batch, (step + 1) * batch)
        inputs = {"input_ids": ids[sl].to(device, non_blocking=True),
                  "attention_mask": mask[sl].to(device, non_blocking=True),
                  "labels": labels[sl].to(device, non_blocking=True)}
        with zdevice.autocast(device, dtype):
            loss = net(**inputs).loss
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    rate = (steps - warm) * batch / (time.perf_counter() - started)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    del net, optimizer
    return {"examples_per_s": round(rate, 1), "precision": str(dtype).replace("torch.", "") if dtype else "float32",
            "peak_gb": round(peak, 2) if peak else None}


def measure_training(args, device, tok) -> list[dict]:
    import torch

    rows = []
    for size in args.sizes:
        batch, length, steps, warm = args.batch, args.seq, args.steps, args.warm
        feats = features(batch * steps, length, len(tok), seed=1)
        row = {"model": f"roberta-{size}" if size != "smoke" else "roberta-smoke", "batch": batch, "seq": length,
               "steps": steps, "warm_steps": warm}
        order = ("bare", "platform") if args.bare_first else ("platform", "bare")
        for which in order:
            try:
                if which == "bare":
                    row["bare"] = bare_loop(size, device, feats, batch, warm, len(tok))
                else:
                    row["platform"] = platform_fit(size, device, feats, batch, warm, tok)
            except Exception as exc:  # report it, and go on to the next part
                row[which] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
            if device.type == "cuda":
                torch.cuda.empty_cache()
        p, b = row["platform"].get("examples_per_s"), row["bare"].get("examples_per_s")
        row["ratio"] = round(p / b, 3) if p and b else None
        row["goal_met"] = row["ratio"] is not None and row["ratio"] >= 0.9
        log(f"training {row['model']}: {row}")
        rows.append(row)
    return rows


# -- (b, c) serving -----------------------------------------------------------------------------------------------


def build_members(folder: Path, size: str, tok, n: int) -> list:
    from zoo import training
    from zoo.serving.base import ModelRef

    refs = []
    spec = training.TrainSpec(head="classification", labels=LABELS, encoder="tiny-roberta")
    for i in range(n):
        out = folder / f"member{i}"
        if not (out / "zoo.json").is_file():
            training.save_artifact(model(size, len(tok), seed=100 + i), tok, spec, {"note": "bench_gpu: random init"},
                                   out, {"seed": 100 + i})
        refs.append(ModelRef(i + 1, f"gpu-bench-m{i}", f"gpubench-v{i + 1}", "classification", out))
    return refs


def load_run(call, concurrency: int, requests: int, warmup: int) -> dict:
    """`requests` calls of `call(x)` (one verdict each) from `concurrency` threads; verdicts/s, p50/p95 ms."""
    for i in range(warmup):
        call(INPUTS[i % len(INPUTS)])
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(requests))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t = time.perf_counter()
            try:
                call(INPUTS[i % len(INPUTS)])
            except Exception as exc:  # counted, first reported
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    out = {"verdicts_per_s": round(len(latencies) / wall, 1), "requests": requests, "concurrency": concurrency,
           "errors": len(errors)}
    if latencies:
        out.update({"p50_ms": round(statistics.median(latencies), 1), "p95_ms": round(pct(latencies, 0.95), 1)})
    if errors:
        out["first_error"] = errors[0]
    return out


def bare_serving(refs, device, tok, batch: int, requests: int) -> dict:
    """The three members loaded as plain transformers models on the device, fed batches of `batch` inputs under
    autocast (the ensemble's mean probabilities), back to back: the ceiling for verdicts/s on this card."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from zoo import device as zdevice

    dtype = zdevice.amp_dtype(device)
    memory = []
    nets = []
    for ref in refs:
        before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
        nets.append(AutoModelForSequenceClassification.from_pretrained(str(ref.path)).to(device).eval())
        if device.type == "cuda":
            memory.append(round((torch.cuda.memory_allocated(device) - before) / 2**30, 2))
    texts = [INPUTS[i % len(INPUTS)] for i in range(batch)]

    def forward() -> None:
        enc = tok([x["text"] for x in texts], [x["text_pair"] for x in texts], padding=True, truncation=True,
                  max_length=128, return_tensors="pt")
        enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        with torch.inference_mode(), zdevice.autocast(device, dtype):
            probs = torch.stack([torch.softmax(n(**enc).logits.float(), -1) for n in nets]).mean(0)
        probs.cpu()

    for _ in range(3):
        forward()
    batches = max(1, requests // batch)
    latencies = []
    started = time.perf_counter()
    for _ in range(batches):
        t = time.perf_counter()
        forward()
        latencies.append((time.perf_counter() - t) * 1000)
    wall = time.perf_counter() - started
    nets.clear()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"verdicts_per_s": round(batches * batch / wall, 1), "batch": batch, "batch_p50_ms": round(statistics.median(latencies), 1),
            "batch_p95_ms": round(pct(latencies, 0.95), 1), "gpu_gb_per_member": memory,
            "precision": str(dtype).replace("torch.", "") if dtype else "float32"}


def inprocess_serving(refs, device, concurrency: int, requests: int) -> dict:
    import torch

    from zoo.serving.inprocess import InProcessBackend

    os.environ["ZOO_DEVICE"] = str(device) if device.type == "cuda" else "cpu"
    backend = InProcessBackend()
    before = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    backend.prepare(refs)
    placed = [str(getattr(backend.predictor(r), "device", next(backend.predictor(r).model.parameters()).device))
              for r in refs]
    loaded = (torch.cuda.memory_allocated(device) - before) / 2**30 if device.type == "cuda" else None
    out = load_run(lambda x: backend.predict(refs, [x]), concurrency, requests, warmup=3)
    out.update({"members_on": placed, "gpu_gb_per_member": round(loaded / len(refs), 2) if loaded else None})
    backend.release(refs)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def nvidia_smi_apps() -> dict[int, float]:
    """GPU memory (GiB) per process, from nvidia-smi ({} when it is not there)."""
    tool = shutil.which("nvidia-smi")
    if not tool:
        return {}
    try:
        text = subprocess.run([tool, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            with contextlib.suppress(ValueError):
                out[int(parts[0])] = round(float(parts[1]) / 1024, 2)
    return out


def torchserve_serving(refs, device, workdir: Path, concurrency: int, requests: int, batch: int) -> dict:
    from zoo.serving.torchserve import TorchServeBackend, ensemble_name
    from zoo.torchserve_ctl import LocalTorchServe, free_ports, torchserve_bin

    torchserve_bin()  # TorchServeError when it is not installed
    extra = {"number_of_gpu": "1" if device.type == "cuda" else "0", "default_response_timeout": "300",
             "vmargs": "-Xmx1g -XX:+UseSerialGC -XX:-UseContainerSupport"}
    os.environ["ZOO_DEVICE"] = "cuda" if device.type == "cuda" else "cpu"  # what the workers inherit
    server = LocalTorchServe(workdir / "torchserve", workdir / "store", *free_ports(5), extra=extra)
    with open(LOCK, "a") as lock:  # one TorchServe per host (its worker sockets have fixed names), as bench_serving
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.perf_counter()
        server.start(timeout_s=180)
        try:
            backend = TorchServeBackend(server.client(), server.model_store, batch_size=batch, max_batch_delay_ms=5)
            name = backend.register(refs, wait_s=400)
            register_s = round(time.perf_counter() - started, 1)
            out = load_run(lambda x: backend.predict(refs, [x]), concurrency, requests, warmup=5)
            workers = [w.get("pid") for d in server.client().describe(name) for w in d.get("workers", [])]
            apps = nvidia_smi_apps()
            on_gpu = {pid: apps[pid] for pid in workers if pid in apps}
            out.update({"register_s": register_s, "batch_size": batch, "worker_pids": workers,
                        "worker_gpu_gb": on_gpu or None,
                        "gpu_gb_per_member": round(sum(on_gpu.values()) / len(refs), 2) if on_gpu else None,
                        "workers_on_gpu": bool(on_gpu) if device.type == "cuda" else False,
                        "model": ensemble_name(refs)})
            return out
        finally:
            server.stop()


def measure_serving(args, device, tok, workdir: Path) -> dict:
    size = args.serve_size
    refs = build_members(workdir / "members", size, tok, args.members)
    out: dict = {"model": f"roberta-{size}", "members": args.members, "concurrency": args.concurrency,
                 "requests": args.requests}
    parts = [("bare", lambda: bare_serving(refs, device, tok, args.serve_batch, args.requests)),
             ("inprocess", lambda: inprocess_serving(refs, device, args.concurrency, args.requests))]
    if not args.skip_torchserve:
        parts.append(("torchserve", lambda: torchserve_serving(refs, device, workdir, args.concurrency,
                                                               args.requests, args.serve_batch)))
    for key, run in parts:
        t = time.perf_counter()
        try:
            out[key] = run()
        except Exception as exc:
            out[key] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
        out[key]["wall_s"] = round(time.perf_counter() - t, 1)
        log(f"serving {key}: {out[key]}")
    bare = out["bare"].get("verdicts_per_s")
    for key in ("torchserve", "inprocess"):
        got = out.get(key, {}).get("verdicts_per_s")
        if bare and got:
            out[key]["ratio"] = round(got / bare, 3)
            out[key]["goal_met"] = out[key]["ratio"] >= 0.8
    return out


# -- report -------------------------------------------------------------------------------------------------------


def markdown(report: dict) -> str:
    lines = [f"# GPU benchmark ({report['device']['name']})", "",
             f"Command: `{report['command']}`; started {report['started']}, wall {report['wall_s']} s; "
             f"torch {report['torch']}, CUDA {report['cuda']}, transformers {report['transformers']}.", "",
             "## (a) Round retraining: platform fit vs bare PyTorch loop (examples/s)", "",
             "| model | batch x seq | precision | platform | bare | ratio (goal >= 0.9) | peak GiB (platform / bare) |",
             "|---|---|---|---|---|---|---|"]
    for r in report.get("training", []):
        p, b = r.get("platform", {}), r.get("bare", {})
        lines.append(f"| {r['model']} | {r['batch']} x {r['seq']} | {b.get('precision', '-')} | "
                     f"{p.get('examples_per_s', p.get('error', '-'))} | {b.get('examples_per_s', b.get('error', '-'))} | "
                     f"{r.get('ratio') or '-'} ({'met' if r.get('goal_met') else 'NOT met'}) | "
                     f"{p.get('peak_gb') or '-'} / {b.get('peak_gb') or '-'} |")
    s = report.get("serving")
    if s:
        lines += ["", f"## (b, c) Serving a {s['members']}-member {s['model']} ensemble "
                      f"({s['concurrency']} concurrent clients, {s['requests']} one-verdict requests)", "",
                  "| path | verdicts/s | ratio to bare (goal >= 0.8) | p50 ms | p95 ms | GPU GiB per member | notes |",
                  "|---|---|---|---|---|---|---|"]
        for key, label in (("bare", "bare batched forward"), ("torchserve", "TorchServe"), ("inprocess", "in-process")):
            x = s.get(key)
            if x is None:
                lines.append(f"| {label} | not run | | | | | |")
                continue
            if "error" in x:
                lines.append(f"| {label} | failed | | | | | {x['error']} |")
                continue
            ratio = f"{x['ratio']} ({'met' if x.get('goal_met') else 'NOT met'})" if "ratio" in x else "1.0 (reference)"
            p50 = x.get("p50_ms", x.get("batch_p50_ms", "-"))
            p95 = x.get("p95_ms", x.get("batch_p95_ms", "-"))
            note = {"bare": f"batches of {x.get('batch')}, latency per batch",
                    "torchserve": f"batch_size {x.get('batch_size')}, workers on GPU: {x.get('workers_on_gpu')}, "
                                  f"errors {x.get('errors')}",
                    "inprocess": f"members on {sorted(set(x.get('members_on', [])))}, errors {x.get('errors')}"}[key]
            lines.append(f"| {label} | {x['verdicts_per_s']} | {ratio} | {p50} | {p95} | "
                         f"{x.get('gpu_gb_per_member') or '-'} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (cpu only with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="tiny configs, a few steps (proves the script)")
    parser.add_argument("--parts", default="training,serving")
    parser.add_argument("--sizes", default=None, help="comma list of base,large (default both; smoke: smoke)")
    parser.add_argument("--batch", type=int, default=None, help="training batch (default 32; smoke 4)")
    parser.add_argument("--seq", type=int, default=None, help="training sequence length (default 128; smoke 16)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 40; smoke 4)")
    parser.add_argument("--warm", type=int, default=None, help="untimed first steps (default 8; smoke 1)")
    parser.add_argument("--bare-first", action="store_true", help="run the bare loop before the platform's")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--serve-size", default=None, help="ensemble members' size (default large; smoke: smoke)")
    parser.add_argument("--serve-batch", type=int, default=8, help="TorchServe batch_size and the bare batch")
    parser.add_argument("--concurrency", type=int, default=None, help="client threads (default 16; smoke 2)")
    parser.add_argument("--requests", type=int, default=None, help="one-verdict requests per path (default 800; smoke 8)")
    parser.add_argument("--skip-torchserve", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "gpu")
    args = parser.parse_args(argv)

    import torch
    import transformers

    from zoo import device as zdevice

    wall = time.perf_counter()
    try:
        device = zdevice.resolve(args.device)
    except zdevice.DeviceError as exc:
        print(f"bench_gpu: {exc}\nThis benchmark needs an NVIDIA GPU; `--device cpu --smoke` runs a tiny check.",
              file=sys.stderr)
        return 2
    if device.type != "cuda" and not args.smoke:
        print("bench_gpu: refusing to run without CUDA: figures on the CPU would mean nothing here. "
              "Use `--device cpu --smoke` for a tiny check of the script.", file=sys.stderr)
        return 2
    smoke = args.smoke
    args.sizes = [s.strip() for s in (args.sizes or ("smoke" if smoke else "base,large")).split(",") if s.strip()]
    args.batch = args.batch or (4 if smoke else 32)
    args.seq = args.seq or (16 if smoke else 128)
    args.steps = args.steps or (4 if smoke else 40)
    args.warm = args.warm if args.warm is not None else (1 if smoke else 8)
    args.serve_size = args.serve_size or ("smoke" if smoke else "large")
    args.concurrency = args.concurrency or (2 if smoke else 16)
    args.requests = args.requests or (8 if smoke else 800)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    os.environ["ZOO_DEVICE"] = str(device) if device.type == "cuda" else "cpu"  # the device policy of the library
    parts = {p.strip() for p in args.parts.split(",")}
    tok = tokenizer()
    report: dict = {"command": " ".join(["python", *sys.argv]), "smoke": smoke,
                    "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "device": {**zdevice.describe(device), "name": gpu_name(device)}, "torch": torch.__version__,
                    "cuda": torch.version.cuda, "transformers": transformers.__version__,
                    "host": {"cpus": os.cpu_count(), "machine": platform.machine()}}
    log(f"device {report['device']}")
    if "training" in parts:
        report["training"] = measure_training(args, device, tok)
    if "serving" in parts:
        with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
            report["serving"] = measure_serving(args, device, tok, Path(tmp))
    report["wall_s"] = round(time.perf_counter() - wall, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    text = markdown(report)
    (args.out / "gpu.md").write_text(text, encoding="utf-8")
    print(text)
    log(f"wrote {args.out / 'gpu.json'} and {args.out / 'gpu.md'} in {report['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
