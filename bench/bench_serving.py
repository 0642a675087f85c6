"""Benchmark: TorchServe memory and verdict latency: one model per member (old), one model per ensemble with
every member's full forward, and one model per ensemble whose members share their frozen trunk (now).

    nice -n 10 .venv/bin/python bench/bench_serving.py [--tasks 4] [--members 3] [--n 30] [--top-layers 3] [--out FILE]

Builds `tasks x members` artifacts with the real encoder (all-MiniLM-L6-v2) for the four demo tasks (3
classification, 1 QA) as the cached-top recipe makes them: per task one encoder, and per member a copy whose
top `top-layers` blocks, pooler and head differ (shaken with the member's seed: exactly the parameters the
recipe trains), so the members' embeddings and lower layers are bit-identical. Then, in the same run:
  0. in process (no HTTP), interleaved: the 3 members' predictions and the occlusion map (verdict + map,
     `explain_ensemble`) with separate forwards vs through the shared trunk, and the largest difference between
     the two (they must agree within 1e-5);
  1. three layouts, registered at once on one TorchServe and their verdicts interleaved:
     (a) per member (the oldest): each member its own TorchServe model and worker; a verdict asks the members
     in parallel (one HTTP request each) and then explains with the first member (input x gradient); a verdict
     with its occlusion map asks every member for its map of the ensemble's answer, in parallel, and averages;
     (b) per ensemble, one worker holding all members, with `share_trunk: false` in its ensemble.json (every
     member runs its full forward, as before trunk sharing); (c) per ensemble as served now (a shared trunk,
     members' top layers in the worker's member threads). Per ensemble, a verdict is one prediction request,
     then the first member's input x gradient; with its occlusion map: one `explain_ensemble` request (the
     members' predictions come with it).
For each layout: RSS (the frontend and that layout's workers, once all are READY and have served), the time to
register everything, and verdict latency p50/p95 over `n` verdicts per task (after a warm-up). Writes
docs/benchmarks/serving.md (or --out), keeping its hand-written "## Notes"; exits non-zero if anything fails.
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

from reports import kept_notes  # bench/ is on sys.path when a bench script runs

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


def build_artifacts(folder: Path, tasks: list[str], members: int, top_layers: int) -> dict[str, list]:
    """Per task: one encoder + head, and per member a copy with its top `top_layers` blocks, pooler and head
    shaken (seeded): the parameters the cached-top recipe trains. Returns ModelRefs per task (ids from 1)."""
    import copy

    import torch

    from zoo import encoder, training
    from zoo.serving.base import ModelRef

    refs: dict[str, list] = {}
    next_id = 1
    for slug in tasks:
        head, labels, _ = TASKS[slug]
        refs[slug] = []
        base = None
        for seed in range(members):
            out = folder / f"top{top_layers}" / slug / f"s{seed}"
            if not (out / "zoo.json").is_file():
                spec = training.TrainSpec(head=head, labels=labels, seed=seed)
                if base is None:
                    training.seed_everything(0)
                    base = training.build_model(spec)
                model = copy.deepcopy(base)
                layers = model.base_model.encoder.layer
                frozen = {id(p) for p in model.base_model.embeddings.parameters()}
                for layer in list(layers)[:len(layers) - top_layers]:
                    frozen |= {id(p) for p in layer.parameters()}
                generator = torch.Generator().manual_seed(1000 + seed)
                with torch.no_grad():
                    for p in model.parameters():
                        if id(p) not in frozen:  # a fine-tuning-sized change of what the recipe trains
                            p.add_(torch.randn(p.shape, generator=generator) * 0.02)
                training.save_artifact(model, encoder.load_tokenizer(), spec,
                                       {"note": f"bench: real encoder, top {top_layers} blocks + head per member"},
                                       out, {"seed": seed})
            refs[slug].append(ModelRef(next_id, f"{slug}-s{seed}", f"{slug}-v{next_id}", head, out))
            next_id += 1
    return refs


def with_ids(refs: dict[str, list], offset: int) -> dict[str, list]:
    """The same artifacts under other model ids (another TorchServe model name for the same ensemble)."""
    from dataclasses import replace

    return {slug: [replace(r, id=r.id + offset) for r in rs] for slug, rs in refs.items()}


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


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def layout_rss_mb(server, names: list[str]) -> float | None:
    """The frontend's RSS plus that of the workers of `names` (None when TorchServe does not say the pids)."""
    client = server.client()
    pids = [w.get("pid") for name in names for d in client.describe(name) for w in d.get("workers", [])]
    if not pids or any(not isinstance(p, int) for p in pids):
        return None
    return rss_mb(torchserve_pid(server)) + sum(rss_mb(p) for p in pids)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def stats(samples: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(samples), 1), "p95_ms": round(pct(samples, 0.95), 1), "n": len(samples)}


def explain(backend, ref, model_input, prediction) -> None:
    from zoo.heads import get_head

    backend.explain(ref, model_input, "input_x_gradient", get_head(ref.head).target_of(prediction))


def verdict_per_member(backend, pool, refs, model_input) -> None:
    futures = [pool.submit(backend.predict, [r], [model_input]) for r in refs]
    predictions = [f.result()[0][0] for f in futures]
    explain(backend, refs[0], model_input, predictions[0])


def mapped_per_member(backend, pool, refs, model_input) -> dict:
    """The per-member layout's verdict with its occlusion map: predictions in parallel, then every member's map
    of the ensemble's answer in parallel, averaged (what `Backend.explain_ensemble` does, in parallel)."""
    from zoo.explain import average_explanations
    from zoo.heads import get_head

    futures = [pool.submit(backend.predict, [r], [model_input]) for r in refs]
    predictions = [f.result()[0][0] for f in futures]
    target = get_head(refs[0].head).ensemble_target(predictions)
    maps = [pool.submit(backend.explain, r, model_input, "occlusion", target) for r in refs]
    return average_explanations([f.result() for f in maps])


def verdict_per_ensemble(backend, refs, model_input) -> None:
    predictions = backend.predict(refs, [model_input])
    explain(backend, refs[0], model_input, predictions[0][0])


def mapped_per_ensemble(backend, refs, model_input) -> dict:
    return backend.explain_ensemble(refs, model_input, "occlusion")


def register_all(backend, groups: list[list]) -> float:
    started = time.perf_counter()
    for group in groups:
        backend.register(group)
    return round(time.perf_counter() - started, 1)


LABELS = {"per_member": "per member (old)", "separate": "per ensemble, full forward per member",
          "shared": "per ensemble, shared trunk (new)"}


def measure_layouts(server, backend, refs: dict[str, list], n: int) -> dict[str, dict]:
    """All three layouts registered at once (per member under the artifacts' ids, per ensemble with separate
    forwards under ids +100, with the shared trunk under +200), and their verdicts interleaved (the order
    rotates from one input to the next), so that the machine's load hits all three alike."""
    from zoo.archive import build_ensemble_archive
    from zoo.serving.torchserve import ensemble_name

    layouts = {"per_member": refs, "separate": with_ids(refs, 100), "shared": with_ids(refs, 200)}
    for rs in layouts["separate"].values():  # built before registering: `register` reuses a complete archive
        build_ensemble_archive([(r.id, r.name, r.path) for r in rs], ensemble_name(rs), server.model_store,
                               share_trunk=False)
    out: dict[str, dict] = {}
    names: dict[str, list[str]] = {}
    for key, layout in layouts.items():
        groups = [[r] for rs in layout.values() for r in rs] if key == "per_member" else list(layout.values())
        out[key] = {"register_s": register_all(backend, groups)}
        names[key] = [ensemble_name(g) for g in groups]
    pool = ThreadPoolExecutor(max_workers=8)
    calls = {
        "per_member": (lambda rs, x: verdict_per_member(backend, pool, rs, x),
                       lambda rs, x: mapped_per_member(backend, pool, rs, x)),
        "separate": (lambda rs, x: verdict_per_ensemble(backend, rs, x), lambda rs, x: mapped_per_ensemble(backend, rs, x)),
        "shared": (lambda rs, x: verdict_per_ensemble(backend, rs, x), lambda rs, x: mapped_per_ensemble(backend, rs, x)),
    }
    samples = {key: {"verdict": [], "mapped": []} for key in layouts}
    keys = list(layouts)
    for slug in refs:
        inputs = TASKS[slug][2]
        for i in range(n + 5):
            x = inputs[i % len(inputs)]
            order = keys[i % 3:] + keys[:i % 3]
            for kind in (0, 1):
                for key in order:
                    t = time.perf_counter()
                    calls[key][kind](layouts[key][slug], x)
                    if i >= 5:  # warm-up
                        samples[key][("verdict", "mapped")[kind]].append((time.perf_counter() - t) * 1000)
    pool.shutdown()
    client = server.client()
    for key in layouts:
        rss = layout_rss_mb(server, names[key])
        out[key].update({"layout": LABELS[key], "models": len(names[key]),
                         "workers": sum(len(d["workers"]) for name in names[key] for d in client.describe(name)),
                         "rss_mb": round(rss) if rss is not None else None,
                         "verdict": stats(samples[key]["verdict"]), "mapped": stats(samples[key]["mapped"])})
        print(f"{LABELS[key]}: {out[key]}", flush=True)
    for name in client.models():
        backend.unregister(name)
    return out


def measure_in_process(refs: dict[str, list], n: int) -> dict:
    """Interleaved, in this process: predictions and occlusion maps of each task's 3 members, separate forwards vs
    the shared trunk; the trunk each ensemble shares; the largest difference between the two."""
    from zoo.explain import explain_ensemble
    from zoo.runtime import Predictor, ensemble

    samples = {key: {"predict": [], "mapped": []} for key in ("separate", "shared")}
    shared_layers, worst = {}, 0.0
    for slug, slug_refs in refs.items():
        predictors = [Predictor.load(r.path) for r in slug_refs]
        both = {"separate": ensemble(predictors, share=False), "shared": ensemble(predictors)}
        shared_layers[slug] = both["shared"].describe()
        inputs = TASKS[slug][2]
        for i in range(n + 3):
            x = inputs[i % len(inputs)]
            got = {}
            for key in (("separate", "shared") if i % 2 == 0 else ("shared", "separate")):
                t = time.perf_counter()
                predictions = both[key].predict([x])
                t1 = time.perf_counter()
                got[key] = (predictions, explain_ensemble(both[key], x, "occlusion"))
                t2 = time.perf_counter()
                if i >= 3:
                    samples[key]["predict"].append((t1 - t) * 1000)
                    samples[key]["mapped"].append((t2 - t1) * 1000)
            worst = max(worst, _difference(got["separate"], got["shared"]))
    return {**{key: {kind: stats(v) for kind, v in s.items()} for key, s in samples.items()},
            "trunks": shared_layers, "max_difference": worst}


def _difference(a, b) -> float:
    (pa, ma), (pb, mb) = a, b
    diffs = [abs(ma["probability"] - mb["probability"])]
    diffs += [abs(x["score"] - y["score"]) for x, y in zip(ma["words"], mb["words"], strict=True)]
    for member_a, member_b in zip(pa, pb, strict=True):
        for x, y in zip(member_a, member_b, strict=True):
            diffs += [abs(x["probs"][k] - y["probs"][k]) for k in x["probs"]] if "probs" in x else [abs(x["score"] - y["score"])]
    return max(diffs)


def run(workdir: Path, args: argparse.Namespace) -> dict:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from zoo.serving.torchserve import TorchServeBackend
    from zoo.torchserve_ctl import LocalTorchServe, free_ports

    tasks = list(TASKS)[: args.tasks]
    results: dict = {"load_before": " / ".join(f"{x:.1f}" for x in os.getloadavg()), "tasks": tasks,
                     "members": args.members, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    refs = build_artifacts(args.artifacts or workdir / "artifacts", tasks, args.members, args.top_layers)
    results["in_process"] = measure_in_process(refs, args.n)
    print(f"in process: {results['in_process']}", flush=True)
    server = LocalTorchServe(workdir / "torchserve", workdir / "store", *free_ports(5))
    with open("/tmp/torchserve.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server.start(timeout_s=180)
        try:
            results["idle_rss_mb"] = round(tree_rss_mb(torchserve_pid(server))[0])
            backend = TorchServeBackend(server.client(), server.model_store, batch_size=8, max_batch_delay_ms=5)
            results.update(measure_layouts(server, backend, refs, args.n))
        finally:
            server.stop()
    results["load_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return results


def report(r: dict, args: argparse.Namespace) -> str:
    old, sep, new, ip = r["per_member"], r["separate"], r["shared"], r["in_process"]
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30

    def gb(x: dict) -> str:
        return f"{x['rss_mb'] / 1024:.2f} GB" if x.get("rss_mb") is not None else "-"

    rows = "\n".join(
        f"| {x['layout']} | {x['models']} | {x['workers']} | {gb(x)} | {x['register_s']} s | "
        f"{x['verdict']['p50_ms']} ms | {x['verdict']['p95_ms']} ms | {x['mapped']['p50_ms']} ms | "
        f"{x['mapped']['p95_ms']} ms |" for x in (old, sep, new))
    trunks = "; ".join(f"{slug} {groups}" for slug, groups in ip["trunks"].items())

    def met(a: float, b: float) -> str:
        return "met" if a <= b * 1.05 else "**NOT met**"

    ratio = lambda a, b: a / b if b else float("nan")  # noqa: E731
    return f"""# Serving: one TorchServe model per member vs per ensemble, with and without a shared trunk

Command: `nice -n 10 .venv/bin/python bench/bench_serving.py --tasks {args.tasks} --members {args.members} --n {args.n} --top-layers {args.top_layers}`
(takes /tmp/torchserve.lock itself), started {r['started']}. Machine: {os.cpu_count()} CPUs, {mem_gb:.0f} GiB RAM,
{platform.machine()}, Python {platform.python_version()}; load average (`uptime`) {r['load_before']} before,
{r['load_after']} after (shared machine).

Models: {len(r['tasks'])} tasks ({', '.join(r['tasks'])}) x {r['members']} members, all-MiniLM-L6-v2 (22.7 M
parameters, 6 layers) as the cached-top recipe leaves them: per task one encoder, and per member a copy whose top
{args.top_layers} blocks, pooler and head differ (shaken with the member's seed), so embeddings and the lower
{6 - args.top_layers} layers are bit-identical. Trunks found at load (members, shared layers): {trunks}.
A verdict is the ensemble's predictions for one input, then the first member's input x gradient explanation
(the figure measured since the per-ensemble change); "verdict + map" is the verdict with the default occlusion
map of the ensemble's answer (what scoring does today): one `explain_ensemble` request per ensemble model (the
members' predictions come from its batch), or, per member, every member's map in parallel, averaged.
All three layouts are registered at once on one TorchServe and their requests interleaved (the order rotates
from one input to the next). RSS: the frontend plus that layout's workers; TorchServe idle (no model):
{r['idle_rss_mb']} MB.

## Through TorchServe (HTTP)

| layout | models | workers | RSS | register all | verdict p50 | verdict p95 | verdict + map p50 | verdict + map p95 |
|---|---|---|---|---|---|---|---|---|
{rows}

Shared trunk vs full forward per member, same worker layout: verdict p50 {sep['verdict']['p50_ms']} -> {new['verdict']['p50_ms']} ms
({ratio(new['verdict']['p50_ms'], sep['verdict']['p50_ms']):.2f}x), verdict + map p50 {sep['mapped']['p50_ms']} -> {new['mapped']['p50_ms']} ms
({ratio(new['mapped']['p50_ms'], sep['mapped']['p50_ms']):.2f}x).

**Goal: per-ensemble verdict p50 no worse than the per-member layout** (within 5 %): verdict {old['verdict']['p50_ms']} (per member)
vs {new['verdict']['p50_ms']} ms (per ensemble, shared trunk): {met(new['verdict']['p50_ms'], old['verdict']['p50_ms'])}
(without sharing: {sep['verdict']['p50_ms']} ms, {met(sep['verdict']['p50_ms'], old['verdict']['p50_ms'])}); verdict + map
{old['mapped']['p50_ms']} vs {new['mapped']['p50_ms']} ms: {met(new['mapped']['p50_ms'], old['mapped']['p50_ms'])}.
Memory goal (<= 3 GB for the per-ensemble layout): {gb(new)}.

## In process (no HTTP), same members, interleaved

| members run | 3 members' predictions p50 | p95 | verdict + occlusion map p50 | p95 |
|---|---|---|---|---|
| separately (full forward each) | {ip['separate']['predict']['p50_ms']} ms | {ip['separate']['predict']['p95_ms']} ms | {ip['separate']['mapped']['p50_ms']} ms | {ip['separate']['mapped']['p95_ms']} ms |
| shared trunk, then each member's top | {ip['shared']['predict']['p50_ms']} ms | {ip['shared']['predict']['p95_ms']} ms | {ip['shared']['mapped']['p50_ms']} ms | {ip['shared']['mapped']['p95_ms']} ms |

Ratio shared / separate at p50: predictions {ratio(ip['shared']['predict']['p50_ms'], ip['separate']['predict']['p50_ms']):.2f}x,
verdict + map {ratio(ip['shared']['mapped']['p50_ms'], ip['separate']['mapped']['p50_ms']):.2f}x (one thread, members one after another).
Largest difference between the two (probabilities, map scores, span scores): {ip['max_difference']:.1e} (must be <= 1e-5).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=4, help="how many of the 4 demo tasks")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--n", type=int, default=30, help="timed verdicts per task and layout")
    parser.add_argument("--top-layers", type=int, default=3,
                        help="blocks that differ per member (the cached-top recipe's top_layers; the rest are shared)")
    parser.add_argument("--artifacts", type=Path, default=None, help="reuse artifacts built in this folder")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "serving.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        results = run(Path(tmp), args)
    text = report(results, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + kept_notes(args.out), encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
