"""Benchmark: model-in-the-loop latency and throughput, in process and through TorchServe, side by side.

    nice -n 10 .venv/bin/python bench/bench_modelzoo.py [--n 200] [--seconds 8] [--clients 16] [--out FILE]

Uses the real encoder (all-MiniLM-L6-v2): fine-tunes three members (seeds 0-2) on 400 SST-2 train rows for one
epoch, deploys them as a round's ensemble in a throw-away SQLite database, and measures (interleaved, so machine
load hits all sides alike):
  1. single-example verdict latency of the 3-model ensemble in process, without and with the default explanation
     (word occlusion over the ensemble), vs the bare forward passes of the same three models (tokenize + forward
     + softmax), and the faithfulness of each explanation method (ERASER comprehensiveness on 40 SST-2 dev
     sentences: top-3 credited words deleted vs 3 random words);
  2. the same verdict through a real TorchServe over HTTP (3 members asked in parallel);
  3. throughput of concurrent single-example requests to one model, TorchServe dynamic batching on vs off;
  4. explanation latency of a ~20-token input over the 3-model ensemble: occlusion, input x gradient,
     LayerIntegratedGradients (with delta).
Prints a Markdown report and writes it to docs/benchmarks/modelzoo.md (or --out).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from reports import kept_notes  # bench/ is on sys.path when a bench script runs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(workdir: Path) -> None:
    os.environ["VAR_DIR"] = str(workdir)
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MODEL_STORE"] = str(workdir / "models")
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(samples_s: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples_s]
    return {"p50": statistics.median(ms), "p95": pct(ms, 95), "n": len(ms)}


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# -- setup ------------------------------------------------------------------------------------------


def train_members(data_dir: Path, n_rows: int, recipe: str = "cached-top"):
    from modelzoo import data, services
    from modelzoo.ensemble_training import train_ensemble
    from tests.factories import RoundFactory, TaskFactory

    task = TaskFactory(slug="bench-sst2", kind="sentiment", config={"labels": ["negative", "positive"]})
    round_ = RoundFactory(task=task, number=1)
    rows = data.jsonl(task, data_dir / "sst2" / "train.jsonl", "sst2")
    train = data.LabelledSet(f"sst2-train-{n_rows}", rows.inputs[:n_rows], rows.targets[:n_rows], rows.keys[:n_rows])
    started = time.perf_counter()
    if recipe == "full":
        versions = [services.train_model(task, services.default_spec(task, seed=s, epochs=1, lr=1e-4, max_length=64),
                                         train, name=f"bench-s{s}", reuse=True) for s in range(3)]
    else:  # what the demo and the round pipeline deploy: frozen lower layers shared, top blocks per member
        versions = train_ensemble(task, train, [0, 1, 2], names=[f"bench-ct-s{s}" for s in range(3)], recipe=recipe)
    print(f"trained 3 members ({recipe}) in {time.perf_counter() - started:.0f} s", flush=True)
    dev = data.jsonl(task, data_dir / "sst2" / "dev.jsonl", "sst2")
    return round_, versions, dev.inputs


def dev_rows(data_dir: Path) -> list[dict]:
    import json

    path = data_dir / "sst2" / "dev.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def twenty_token_input(inputs: list[dict[str, str]]) -> dict[str, str]:
    from zoo.encoder import load_tokenizer

    tok = load_tokenizer()
    return min(inputs, key=lambda i: abs(len(tok(i["text"])["input_ids"]) - 20))


# -- measurements -----------------------------------------------------------------------------------


def bench_in_process(round_, versions, inputs, n: int) -> dict[str, dict[str, float]]:
    import torch

    from modelzoo import services
    from modelzoo.serving import ModelRef, get_backend

    backend = get_backend("inprocess")
    predictors = [backend.predictor(ModelRef.of(v)) for v in versions]

    def bare(text: str) -> None:
        for p in predictors:
            with torch.inference_mode():
                p.model(**p.tokenizer([text], return_tensors="pt")).logits.softmax(-1)

    # What a writer waits for now is the verdict (one forward pass of the ensemble); the word map follows in a job
    # of its own (annotation.scoring.explain_example -> services.explain_verdict). Both are timed, and their sum.
    # The map runs in the default precision (bfloat16 batches where the CPU multiplies them natively,
    # zoo.explain.occlusion_dtype) and, interleaved, forced to float32, so the two are compared in one run.
    from zoo.explain import OCCLUSION_PRECISION_ENV, occlusion_dtype

    verdict, mapped, explained, forward, mapped32, whole = [], [], [], [], [], []
    version_ids = [v.pk for v in versions]
    default = os.environ.pop(OCCLUSION_PRECISION_ENV, None)

    def with_env(name: str, value: str, call: Callable[[], object]) -> object:
        os.environ[name] = value
        try:
            return call()
        finally:
            os.environ.pop(name)

    for i in range(n + 10):
        model_input = inputs[i % len(inputs)]
        out: dict = {}
        v = timed(lambda mi=model_input, o=out: o.update(v=services.predict_for_round(round_, [mi], explain=False)[0]))
        m = timed(lambda mi=model_input, o=out: services.explain_verdict(round_.task, version_ids, mi, o["v"]["ensemble"]))
        m32 = timed(lambda mi=model_input, o=out: with_env(OCCLUSION_PRECISION_ENV, "fp32", lambda: services.explain_verdict(
            round_.task, version_ids, mi, o["v"]["ensemble"])))
        # the same verdict and map with each member's whole last layer (not only the [CLS] token's), interleaved
        w = timed(lambda mi=model_input: with_env("ZOO_FIRST_TOKEN", "0", lambda: services.explain_verdict(
            round_.task, version_ids, mi, services.predict_for_round(round_, [mi], explain=False)[0]["ensemble"])))
        b = timed(lambda mi=model_input: bare(mi["text"]))
        if i >= 10:  # warm-up
            verdict.append(v)
            mapped.append(m)
            explained.append(v + m)
            forward.append(b)
            mapped32.append(m32)
            whole.append(w)
    if default is not None:
        os.environ[OCCLUSION_PRECISION_ENV] = default
    words = statistics.median(len(inputs[i % len(inputs)]["text"].split()) for i in range(10, n + 10))
    from zoo.runtime import ensemble

    precision = occlusion_dtype(int(words) + 1)
    return {"verdict": summary(verdict), "map": summary(mapped), "explained": summary(explained),
            "bare": summary(forward), "method": services.explanation_method(round_.task), "words": words,
            "sharing": ensemble(predictors).describe(), "map_fp32": summary(mapped32),
            "explained_whole": summary(whole),
            "precision": "bfloat16" if precision is not None else "float32"}


def bench_faithfulness(versions, dev_rows, n: int = 40) -> dict[str, dict[str, float]]:
    from modelzoo.serving import ModelRef, get_backend
    from zoo.faithfulness import comprehensiveness, held_out_sentences

    predictors = [get_backend("inprocess").predictor(ModelRef.of(v)) for v in versions]
    sentences = held_out_sentences(dev_rows, n)
    out = {}
    for method in ("occlusion", "input_x_gradient", "integrated_gradients"):
        result = comprehensiveness(predictors, sentences, k=3, seed=0, method=method)
        out[method] = {"wins": result.wins, "top": result.mean_top, "random": result.mean_random, "n": len(result.rows)}
        print(f"faithfulness {method}: {out[method]}", flush=True)
    return out


def bench_torchserve_latency(round_, inputs, n: int) -> dict[str, dict[str, float]]:
    from django.conf import settings

    from modelzoo import services

    samples = {"inprocess": [], "torchserve": []}
    for i in range(n + 10):
        model_input = inputs[i % len(inputs)]
        for name in ("inprocess", "torchserve"):
            settings.MODEL_BACKEND = name
            t = timed(lambda mi=model_input: services.predict_for_round(round_, [mi], explain=False))
            if i >= 10:
                samples[name].append(t)
    settings.MODEL_BACKEND = "inprocess"
    return {name: summary(s) for name, s in samples.items()}


def throughput(client, name: str, inputs, clients: int, seconds: float) -> float:
    done, stop = [0] * clients, time.perf_counter() + seconds

    def worker(k: int) -> None:
        i = k
        while time.perf_counter() < stop:
            client.predict(name, [inputs[i % len(inputs)]])
            done[k] += 1
            i += clients

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - started)


def bench_batching(server, version, inputs, clients: int, seconds: float) -> dict[str, float]:
    from zoo.archive import build_mar

    client = server.client()
    mar = build_mar(version.artifact_path, "bench-throughput", server.model_store)
    out = {}
    for label, batch, delay, workers in (("off-2", 1, 0, 2), ("off-1", 1, 0, 1), ("on-1", 16, 10, 1), ("on-2", 16, 10, 2)):
        client.register(mar.name, "bench-throughput", batch_size=batch, max_batch_delay_ms=delay, workers=workers)
        client.wait_ready("bench-throughput")
        throughput(client, "bench-throughput", inputs, clients, 1.5)  # warm-up
        out[label] = throughput(client, "bench-throughput", inputs, clients, seconds)
        client.unregister("bench-throughput")
        print(f"throughput batching {label} workers: {out[label]:.1f} examples/s", flush=True)
    out["off"], out["on"] = max(out["off-1"], out["off-2"]), max(out["on-1"], out["on-2"])
    return out


def bench_floor(versions, inputs, n: int, precision: str) -> dict[str, float]:
    """The word map's arithmetic floor at the median input: the multiply-adds of its matrix products (the shared
    trunk once per row, each member's own blocks, a classifier's last layer for [CLS] alone), divided by the rate
    this CPU multiplies matrices of the map's shapes at, on one thread, in the map's precision (the best of 30
    products, so no overhead at all is counted). What no implementation of word occlusion can go below here."""
    import torch

    from modelzoo.serving import ModelRef, get_backend
    from zoo.runtime import ensemble
    from zoo.trunk import reads_first_token_only

    predictors = [get_backend("inprocess").predictor(ModelRef.of(v)) for v in versions]
    group = ensemble(predictors).groups[0]
    config = predictors[0].model.config
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    sample = inputs[:n]
    tokens = statistics.median(len(predictors[0].tokenizer(i["text"])["input_ids"]) for i in sample)
    rows = statistics.median(len(i["text"].split()) for i in sample) + 1
    full = 4 * hidden * hidden + 2 * hidden * inner  # multiply-adds per token per layer
    last = (tokens * 2 * hidden * hidden + full - 2 * hidden * hidden) / tokens \
        if reads_first_token_only(predictors[0].model) else full
    per_token = group.k * full + len(group.members) * ((layers - group.k - 1) * full + last) if group.shared \
        else len(predictors) * ((layers - 1) * full + last)
    flops = 2 * rows * tokens * per_token
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    a = torch.randn(int(rows * tokens), hidden, dtype=dtype)
    w = torch.randn(inner, hidden, dtype=dtype)
    for _ in range(5):
        a @ w.t()
    best = min(timed(lambda: a @ w.t()) for _ in range(30))
    rate = 2 * a.shape[0] * hidden * inner / best
    return {"gflop": flops / 1e9, "rate": rate / 1e9, "ms": flops / rate * 1000, "rows": rows, "tokens": tokens,
            "layers_per_row": per_token / full}


def bench_explanations(versions, model_input, n: int) -> dict[str, dict[str, float]]:
    from modelzoo.serving import ModelRef, get_backend

    backend = get_backend("inprocess")
    refs = [ModelRef.of(v) for v in versions]
    tokens = len(backend.predictor(refs[0]).tokenizer(model_input["text"])["input_ids"])
    out: dict[str, dict[str, float]] = {}
    for method, count in (("occlusion", n), ("input_x_gradient", n), ("integrated_gradients", max(20, n // 5))):
        samples, deltas = [], []
        for i in range(count + 3):
            start = time.perf_counter()
            result = backend.explain_ensemble(refs, model_input, method)
            if i >= 3:
                samples.append(time.perf_counter() - start)
                deltas.append(abs(result["delta"] or 0.0))
        out[method] = {**summary(samples), "max_delta": max(deltas), "steps": result["steps"], "tokens": tokens}
    return out


# -- report -----------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report(r: dict, args: argparse.Namespace) -> str:
    from zoo.precision import native_bf16

    ip, lat, thr, ex, fl = r["inprocess"], r["torchserve"], r["batching"], r["explain"], r["floor"]
    ratio = ip["verdict"]["p50"] / ip["bare"]["p50"]
    ratio95 = ip["verdict"]["p95"] / ip["bare"]["p95"]
    gap = lat["torchserve"]["p50"] - lat["inprocess"]["p50"]
    speedup = thr["on"] / thr["off"]
    occ, fast, lig = ex["occlusion"], ex["input_x_gradient"], ex["integrated_gradients"]
    faith = r["faithfulness"]
    explained = ip["explained"]["p50"] / ip["bare"]["p50"]
    explained95 = ip["explained"]["p95"] / ip["bare"]["p95"]

    def ok(flag: bool) -> str:
        return "met" if flag else "**not met**"

    return f"""# Model zoo benchmark

Command: `nice -n 10 .venv/bin/python bench/bench_modelzoo.py --n {args.n} --seconds {args.seconds:g} --clients {args.clients} --train-rows {args.train_rows} --recipe {args.recipe}`
(run by `make bench`). Machine: {os.cpu_count()} cores ({cpu_model()}; bfloat16 in hardware: {"yes" if native_bf16() else "no"}), {platform.python_implementation()} {platform.python_version()},
load average at start {r["load"]}. Real encoder (all-MiniLM-L6-v2, 22.7 M parameters), three members fine-tuned on
{args.train_rows} SST-2 rows (seeds 0-2, recipe `{args.recipe}`), inputs: SST-2 dev sentences. Measured side by side in one run (interleaved).
The machine is shared with other work, so absolute figures are noisy; the ratios are the point.

## 1. Single-example verdict, 3-model ensemble, in process

| | p50 ms | p95 ms |
|---|---|---|
| bare forward passes of the 3 models (tokenize + forward + softmax) | {ip["bare"]["p50"]:.1f} | {ip["bare"]["p95"]:.1f} |
| `predict_for_round` verdict (ensemble lookup, 3 members, aggregation) | {ip["verdict"]["p50"]:.1f} | {ip["verdict"]["p95"]:.1f} |
| the verdict's word map alone (`explain_verdict`: {ip["method"]} over the 3 members, the job that follows the verdict) | {ip["map"]["p50"]:.1f} | {ip["map"]["p95"]:.1f} |
| the same map with its batch forced to float32 (`ZOO_OCCLUSION_PRECISION=fp32`), interleaved | {ip["map_fp32"]["p50"]:.1f} | {ip["map_fp32"]["p95"]:.1f} |
| verdict + its word map | {ip["explained"]["p50"]:.1f} | {ip["explained"]["p95"]:.1f} |
| verdict + word map with each member's whole last layer (`ZOO_FIRST_TOKEN=0`), interleaved | {ip["explained_whole"]["p50"]:.1f} | {ip["explained_whole"]["p95"]:.1f} |
| ratio verdict / bare (what the writer waits for) | {ratio:.2f} | {ratio95:.2f} |
| ratio verdict + word map / bare | {explained:.2f} | {explained95:.2f} |

Inputs: SST-2 dev sentences, median {ip["words"]:g} words. Members trained with the `{args.recipe}` recipe; shared
trunk found at load (member indices, shared layers): {ip.get("sharing")}. Goal verdict / bare <= 1.3:
{ok(ratio <= 1.3)} (p50). Goal verdict + explanation / bare <= 2: {ok(explained <= 2)} (p50: {explained:.2f}x).
The map's batch ran in {ip["precision"]} by default on this CPU (`zoo.explain.occlusion_dtype`); float32 / default
map at p50: {ip["map_fp32"]["p50"] / ip["map"]["p50"]:.2f}x. A classifier's last layer runs for the [CLS] token alone
(`zoo.trunk.FirstTokenLayer`, the same logits): verdict + map with whole last layers / default at p50:
{ip["explained_whole"]["p50"] / ip["explained"]["p50"]:.2f}x. The verdict no longer waits for its map (the map is a job of its
own that follows it, on the explainer), but the map still costs what it costs: word occlusion runs the input plus
one row per word through each member's top layers (the shared lower layers once for all members), so its cost
grows with the number of words.

**Arithmetic floor of the map** (`bench_floor`): at the median input ({fl["rows"]:g} rows of {fl["tokens"]:g} tokens,
{fl["layers_per_row"]:.2f} layer passes per row: the shared trunk once, each member's own blocks, a classifier's last
layer for [CLS] alone) its matrix products are {fl["gflop"]:.1f} GFLOP; this CPU multiplies matrices of the map's
shapes at {fl["rate"]:.0f} GFLOP/s on one thread in {ip["precision"]} (the best of 30 products, no overhead counted), so
no implementation of word occlusion can take less than **{fl["ms"]:.0f} ms** here: {fl["ms"] / ip["bare"]["p50"]:.2f}x the
bare forward passes before the verdict is counted (the goal leaves the map {2 * ip["bare"]["p50"] - ip["verdict"]["p50"]:.0f} ms).

### Faithfulness of the map (same run, same 3 members)

ERASER comprehensiveness on {faith["occlusion"]["n"]:g} SST-2 dev sentences of 8-30 words (evaluation data, never trained on):
the share of sentences where deleting the 3 words the map credits most for the ensemble's answer lowers the
ensemble's probability of that answer more than deleting 3 random words (seed 0), and the mean drops.

| method | sentences won | mean drop, top-3 deleted | mean drop, 3 random deleted |
|---|---|---|---|
| word occlusion (default) | {faith["occlusion"]["wins"]:.2f} | {faith["occlusion"]["top"]:.3f} | {faith["occlusion"]["random"]:.3f} |
| input x gradient | {faith["input_x_gradient"]["wins"]:.2f} | {faith["input_x_gradient"]["top"]:.3f} | {faith["input_x_gradient"]["random"]:.3f} |
| integrated gradients | {faith["integrated_gradients"]["wins"]:.2f} | {faith["integrated_gradients"]["top"]:.3f} | {faith["integrated_gradients"]["random"]:.3f} |

Goal >= 0.80 for the default: {ok(faith["occlusion"]["wins"] >= 0.8)}.

## 2. The same verdict through TorchServe over HTTP

Members are asked in parallel (one HTTP request each; 1 worker per model, 1 torch thread per worker,
batch_size 1).

| | p50 ms | p95 ms |
|---|---|---|
| in process | {lat["inprocess"]["p50"]:.1f} | {lat["inprocess"]["p95"]:.1f} |
| TorchServe | {lat["torchserve"]["p50"]:.1f} | {lat["torchserve"]["p95"]:.1f} |

TorchServe - in process at p50: {gap:+.1f} ms. Goal <= +10 ms: {ok(gap <= 10)}.

## 3. Throughput of concurrent single-example requests (one model, {args.clients} clients, {args.seconds:g} s each)

The clients run on the same 2 cores as TorchServe (16 Python threads over HTTP keep-alive).

| dynamic batching | 1 worker | 2 workers |
|---|---|---|
| off (batch_size 1) | {thr["off-1"]:.1f} | {thr["off-2"]:.1f} |
| on (batch_size 16, max_batch_delay 10 ms) | {thr["on-1"]:.1f} | {thr["on-2"]:.1f} |

Best with batching / best without: {speedup:.2f}x. Goal >= 2x: {ok(speedup >= 2)}.

## 4. Explanation latency over the 3-model ensemble, {fast["tokens"]}-token input (explanation alone, in process)

| method | p50 ms | p95 ms | steps | max convergence delta |
|---|---|---|---|---|
| word occlusion (default; one batch per member, members' predictions included) | {occ["p50"]:.1f} | {occ["p95"]:.1f} | 1 | - |
| input x gradient (3 members + a prediction pass) | {fast["p50"]:.1f} | {fast["p95"]:.1f} | 1 | - |
| LayerIntegratedGradients on the predicted logit (3 members) | {lig["p50"]:.1f} | {lig["p95"]:.1f} | {lig["steps"]} | {lig["max_delta"]:.1e} |

LIG delta < 0.1: {ok(lig["max_delta"] < 0.1)}.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="timed verdicts per side")
    parser.add_argument("--seconds", type=float, default=8.0, help="duration of each throughput run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients in the throughput runs")
    parser.add_argument("--train-rows", type=int, default=400, help="SST-2 rows each member is fine-tuned on")
    parser.add_argument("--recipe", default="cached-top", choices=["cached-top", "full"],
                        help="how the 3 members are trained (cached-top: what the demo and the pipeline deploy)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "modelzoo.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-modelzoo-") as tmp:
        print(report(run(Path(tmp), args), args))


def run(workdir: Path, args: argparse.Namespace) -> dict:
    setup_django(workdir)
    from django.conf import settings

    from modelzoo import services
    from zoo.torchserve_ctl import LocalTorchServe, free_ports

    results: dict = {"load": " / ".join(f"{x:.1f}" for x in os.getloadavg())}
    round_, versions, inputs = train_members(Path(settings.DATA_DIR), args.train_rows, args.recipe)
    services.deploy_ensemble(round_, versions)
    results["inprocess"] = bench_in_process(round_, versions, inputs, args.n)
    print(f"in process: {results['inprocess']}", flush=True)
    results["explain"] = bench_explanations(versions, twenty_token_input(inputs), args.n)
    print(f"explanations: {results['explain']}", flush=True)
    results["floor"] = bench_floor(versions, inputs, args.n, results["inprocess"]["precision"])
    print(f"floor: {results['floor']}", flush=True)
    results["faithfulness"] = bench_faithfulness(versions, dev_rows(Path(settings.DATA_DIR)))
    server = LocalTorchServe(workdir / "torchserve", Path(settings.MODEL_STORE) / "torchserve", *free_ports(5))
    server.start()
    try:
        settings.TORCHSERVE_URL, settings.TORCHSERVE_MANAGEMENT_URL = server.inference_url, server.management_url
        settings.TORCHSERVE_BATCH_SIZE, settings.TORCHSERVE_MAX_BATCH_DELAY_MS = 1, 0
        from modelzoo.serving import get_backend

        get_backend("torchserve").prepare([services.ModelRef.of(v) for v in versions])
        results["torchserve"] = bench_torchserve_latency(round_, inputs, args.n)
        print(f"torchserve latency: {results['torchserve']}", flush=True)
        get_backend("torchserve").release([services.ModelRef.of(v) for v in versions])
        results["batching"] = bench_batching(server, versions[0], inputs, args.clients, args.seconds)
    finally:
        server.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(results, args) + kept_notes(args.out), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
