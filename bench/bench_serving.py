"""Benchmark: TorchServe memory and verdict latency, one model per member (old) vs one model per ensemble (new).

    nice -n 10 .venv/bin/python bench/bench_serving.py [--tasks 4] [--members 3] [--n 40] [--out FILE]

Builds `tasks x members` artifacts with the real encoder (all-MiniLM-L6-v2 with a fresh head: the same
weights, compute and memory as a fine-tuned member) for the four demo tasks (3 classification, 1 QA), starts
one TorchServe (under /tmp/torchserve.lock: one TorchServe per host) and, in the same run:
  1. per-member layout (as before): each member its own TorchServe model and worker; a verdict asks the
     members in parallel (one HTTP request each) and then explains with the first member;
  2. per-ensemble layout (now): one TorchServe model per ensemble, one worker holding all members; a verdict
     is one prediction request for all members, then the explanation of the first member.
For each layout: RSS of TorchServe and every worker (the sum of VmRSS over the process tree, once all are
READY and have served), the time to register everything, and verdict latency p50/p95 over `n` verdicts per
task (after a warm-up). Writes docs/benchmarks/serving.md (or --out); exits non-zero if anything fails.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TASKS = {  # slug: (head, labels, inputs)
    "sentiment": ("classification", ["negative", "positive", "neutral"], [
        {"text": "A gentle, funny film that never overstays its welcome."},
        {"text": "Dull. Utterly, painfully dull, and twenty minutes too long!"},
        {"text": "The acting is fine but the plot falls apart in the second half."},
        {"text": "I was not expecting to be moved, and yet here we are."}]),
    "nli": ("classification", ["entailment", "neutral", "contradiction"], [
        {"text": "A man is playing a guitar on a crowded street corner.", "text_pair": "Someone is making music."},
        {"text": "Two dogs run through the snow.", "text_pair": "The animals are asleep indoors."},
        {"text": "A woman reads a newspaper at the station.", "text_pair": "She is waiting for a train."}]),
    "hate-speech": ("classification", ["hateful", "not-hateful"], [
        {"text": "People like you should not be allowed to vote."},
        {"text": "Had a great time at the match with my neighbours today."},
        {"text": "Go back to where you came from, nobody wants you here."}]),
    "qa": ("qa", [], [
        {"question": "When was the tower completed?",
         "context": "The Eiffel Tower was completed in 1889 and it stands in Paris, France, on the Champ de Mars."},
        {"question": "Who painted the ceiling?",
         "context": "The ceiling of the Sistine Chapel was painted by Michelangelo between 1508 and 1512."}]),
}


def build_artifacts(folder: Path, tasks: list[str], members: int) -> dict[str, list]:
    from modelzoo import encoder, training
    from modelzoo.serving.base import ModelRef

    refs: dict[str, list] = {}
    next_id = 1
    for slug in tasks:
        head, labels, _ = TASKS[slug]
        refs[slug] = []
        for seed in range(members):
            out = folder / slug / f"s{seed}"
            if not (out / "zoo.json").is_file():
                spec = training.TrainSpec(head=head, labels=labels, seed=seed)
                training.seed_everything(seed)
                training.save_artifact(training.build_model(spec), encoder.load_tokenizer(), spec,
                                       {"note": "bench: real encoder, fresh head"}, out, {"seed": seed})
            refs[slug].append(ModelRef(next_id, f"{slug}-s{seed}", f"{slug}-v{next_id}", head, out))
            next_id += 1
    return refs


def tree_rss_mb(root_pid: int) -> tuple[float, int]:
    """Sum of VmRSS over `root_pid` and all its descendants (MB), and how many processes that is."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, count, todo = 0, 0, [root_pid]
    while todo:
        pid = todo.pop()
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    count += 1
        except OSError:
            continue
        todo += children.get(pid, [])
    return total / 1024, count


def torchserve_pid(server) -> int:
    pid_file = server.workdir / "tmp" / ".model_server.pid"
    return int(pid_file.read_text().strip())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def verdict_per_member(backend, pool, refs, model_input) -> None:
    futures = [pool.submit(backend.predict, [r], [model_input]) for r in refs]
    predictions = [f.result()[0][0] for f in futures]
    explain(backend, refs[0], model_input, predictions[0])


def verdict_per_ensemble(backend, refs, model_input) -> None:
    predictions = backend.predict(refs, [model_input])
    explain(backend, refs[0], model_input, predictions[0][0])


def explain(backend, ref, model_input, prediction) -> None:
    from modelzoo.heads import get_head

    backend.explain(ref, model_input, "input_x_gradient", get_head(ref.head).target_of(prediction))


def measure_layout(label: str, server, backend, refs: dict[str, list], n: int, per_member: bool) -> dict:
    started = time.perf_counter()
    for slug_refs in refs.values():
        for group in ([[r] for r in slug_refs] if per_member else [slug_refs]):
            backend.register(group)
    registered_s = time.perf_counter() - started
    pool = ThreadPoolExecutor(max_workers=8)
    samples: list[float] = []
    for slug, slug_refs in refs.items():
        inputs = TASKS[slug][2]
        for i in range(n + 5):
            t = time.perf_counter()
            if per_member:
                verdict_per_member(backend, pool, slug_refs, inputs[i % len(inputs)])
            else:
                verdict_per_ensemble(backend, slug_refs, inputs[i % len(inputs)])
            if i >= 5:  # warm-up
                samples.append((time.perf_counter() - t) * 1000)
    pool.shutdown()
    rss, processes = tree_rss_mb(torchserve_pid(server))
    workers = sum(len(d["workers"]) for name in server.client().models() for d in server.client().describe(name))
    result = {"layout": label, "models": len(server.client().models()), "workers": workers, "processes": processes,
              "rss_mb": round(rss), "register_s": round(registered_s, 1), "verdicts": len(samples),
              "p50_ms": round(statistics.median(samples), 1), "p95_ms": round(pct(samples, 0.95), 1)}
    print(f"{label}: {result}", flush=True)
    for name in server.client().models():
        backend.unregister(name)
    time.sleep(2)
    return result


def run(workdir: Path, args: argparse.Namespace) -> dict:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from modelzoo.serving.torchserve import TorchServeBackend
    from modelzoo.torchserve_ctl import LocalTorchServe, free_ports

    tasks = list(TASKS)[: args.tasks]
    refs = build_artifacts(args.artifacts or workdir / "artifacts", tasks, args.members)
    server = LocalTorchServe(workdir / "torchserve", workdir / "store", *free_ports(5))
    results: dict = {"load_before": " / ".join(f"{x:.1f}" for x in os.getloadavg()), "tasks": tasks,
                     "members": args.members}
    with open("/tmp/torchserve.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server.start(timeout_s=180)
        try:
            results["idle_rss_mb"] = round(tree_rss_mb(torchserve_pid(server))[0])
            backend = TorchServeBackend(server.client(), server.model_store, batch_size=8, max_batch_delay_ms=5)
            results["per_member"] = measure_layout("per member (old)", server, backend, refs, args.n, True)
            results["per_ensemble"] = measure_layout("per ensemble (new)", server, backend, refs, args.n, False)
        finally:
            server.stop()
    results["load_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return results


def report(r: dict, args: argparse.Namespace) -> str:
    old, new = r["per_member"], r["per_ensemble"]
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    rows = "\n".join(
        f"| {x['layout']} | {x['models']} | {x['workers']} | {x['processes']} | {x['rss_mb'] / 1024:.2f} GB | "
        f"{x['register_s']} s | {x['p50_ms']} ms | {x['p95_ms']} ms |" for x in (old, new))
    return f"""# Serving: one TorchServe model per member vs per ensemble

Command: `nice -n 10 .venv/bin/python bench/bench_serving.py --tasks {args.tasks} --members {args.members} --n {args.n}`
(takes /tmp/torchserve.lock itself). Machine: {os.cpu_count()} CPUs, {mem_gb:.0f} GiB RAM, {platform.machine()},
Python {platform.python_version()}; load average {r['load_before']} before, {r['load_after']} after (shared machine).

Models: {len(r['tasks'])} tasks ({', '.join(r['tasks'])}) x {r['members']} members, all-MiniLM-L6-v2 (22.7 M
parameters) with a fresh head each: the size and compute of the demo ensembles. Both layouts are measured in
the same run, on the same TorchServe, one after the other (old first), with the same inputs. A verdict is what
scoring does: the ensemble's predictions for one input, then the first member's input x gradient explanation.
Memory: the sum of VmRSS over TorchServe's process tree (java frontend + every Python worker) once every model
is READY and has served; TorchServe idle (no model): {r['idle_rss_mb']} MB.

| layout | TorchServe models | workers | processes | RSS | register all | verdict p50 | verdict p95 |
|---|---|---|---|---|---|---|---|
{rows}

Memory: {old['rss_mb'] / 1024:.2f} GB -> {new['rss_mb'] / 1024:.2f} GB ({new['rss_mb'] / old['rss_mb']:.2f}x; goal <= 3 GB:
{'met' if new['rss_mb'] <= 3072 else 'NOT met'}). Verdict latency p50 {old['p50_ms']} -> {new['p50_ms']} ms,
p95 {old['p95_ms']} -> {new['p95_ms']} ms (goal: no worse; {'met' if new['p50_ms'] <= old['p50_ms'] * 1.05 else 'NOT met'} at p50).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=4, help="how many of the 4 demo tasks")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--n", type=int, default=40, help="timed verdicts per task and layout")
    parser.add_argument("--artifacts", type=Path, default=None, help="reuse artifacts built in this folder")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "serving.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        results = run(Path(tmp), args)
    text = report(results, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
