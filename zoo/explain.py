"""Word attributions for the ensemble's answer: word occlusion (default), input x gradient, integrated gradients.

No Django imports (packed into TorchServe archives with `runtime.py`).

**Occlusion** (the default, `explain_ensemble(..., method="occlusion")`) is faithful by construction: the
score of a word is the drop in the *ensemble's* probability of its answer when that word is deleted from the
input (the mean of the members' probabilities, as `mean_probs` / `best_mean_span` aggregate them). Every
perturbation of one input goes to each member in **one** forward batch: the unchanged input plus one row per
word, with the word's tokens removed (later tokens move up; rows are padded to the longest); members that share
a frozen trunk (`zoo.trunk`: the cached-top recipe's members) run the embeddings and lower layers once for
that batch and only their own top layers and head apart. Deleting, rather
than replacing the word by [PAD] or [MASK], is exactly what a reader does when trying the sentence without the
word, and what the faithfulness check (ERASER comprehensiveness: delete the top words) measures; replacement
leaves a token the model never saw in that place during training. For QA the explained quantity is the
probability of the answer span (start and end softmax over all valid spans of the passage); words inside the
answer are replaced by [MASK] instead of deleted, so the span still exists. Positive scores mean "removing
this word lowers the confidence in the answer" (evidence for it), negative ones "removing it raises it".
On a CPU that multiplies bfloat16 natively the batch runs in bfloat16 (`occlusion_dtype`: about half the time;
the answer and its confidence then come from a float32 pass over the unchanged input).

**Gradient methods** (selectable): `input_x_gradient` (gradient of the target logit x the word embedding) and
`integrated_gradients` (Captum LayerIntegratedGradients from a [PAD] baseline, on the target *logit*, with the
convergence delta recorded). Which logits they attribute is the head spec's choice
(`HeadSpec.explained_logits`); over an ensemble, each member's normalised word scores are averaged.

**Devices**: the perturbed batches and gradients are computed where the members' weights are
(`runtime.Predictor.device`, ZOO_DEVICE). On a GPU an occlusion batch autocasts to the card's precision
(`zoo.device.amp_dtype`, as predictions do) and the gradient methods run in float32 (integrated gradients'
convergence delta is meaningless in half precision); the probabilities and scores are read on the CPU and come
back as Python floats. Words are the text's own (`zoo.offsets`: SentencePiece "▁" and byte-level "Ġ" pieces are
never credited as words).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from zoo import device as zoo_device
from zoo import precision

# The methods, their names and labels: zoo.explain_methods (torch-free, so the site's settings read it too);
# DEFAULT_METHOD, METHODS and METHOD_NAMES are read here too (the TorchServe handler, zoo.runtime).
from zoo.explain_methods import DEFAULT_METHOD as DEFAULT_METHOD
from zoo.explain_methods import INPUT_X_GRADIENT, INTEGRATED_GRADIENTS, METHOD_SPECS, OCCLUSION, check_method
from zoo.explain_methods import METHOD_NAMES as METHOD_NAMES
from zoo.explain_methods import METHODS as METHODS
from zoo.flags import choice
from zoo.trunk import SharedEnsemble

IG_MAX_STEPS = 32  # Gauss-Legendre: delta ~1e-5 at 32 steps on a 20-token input (1e-2 at 8)
IG_MIN_STEPS = 8
IG_TOKEN_BUDGET = 768  # steps x tokens per attribution: long inputs get fewer steps


OCCLUSION_PRECISION_ENV = "ZOO_OCCLUSION_PRECISION"  # auto (default) | bf16 | fp32
PRECISION_ALIASES = {"float32": "fp32", "off": "fp32", "0": "fp32", "bfloat16": "bf16"}
BF16_MIN_ROWS = 4  # a batch this small is cheaper in fp32 (measured: one 24-token row, 8 ms fp32 vs 12 ms bf16)


def occlusion_dtype(rows: int) -> torch.dtype | None:
    """The precision of an occlusion batch's matrix products: bfloat16 when the CPU multiplies it natively
    (AMX or AVX-512 BF16: 2.3x faster on a 20-row batch here, docs/benchmarks/modelzoo.md) and the batch has at
    least BF16_MIN_ROWS rows; else None (float32). `ZOO_OCCLUSION_PRECISION=fp32` or `bf16` forces one. The
    verdict itself is always computed in float32; only the map's perturbed rows (and its row 0) use this."""
    wanted = choice(OCCLUSION_PRECISION_ENV, "auto", ("auto", "bf16", "fp32"), aliases=PRECISION_ALIASES)
    if wanted == "fp32":
        return None
    if wanted == "bf16":
        return torch.bfloat16
    if rows >= BF16_MIN_ROWS and precision.native_bf16():
        return torch.bfloat16
    return None


def ig_steps(n_tokens: int) -> int:
    return max(IG_MIN_STEPS, min(IG_MAX_STEPS, IG_TOKEN_BUDGET // max(n_tokens, 1)))


# -- the ensemble -----------------------------------------------------------------------------------


def explain_ensemble(predictors: list, model_input: dict[str, str], method: str = OCCLUSION,
                     target: Any = None) -> dict[str, Any]:
    """Word attributions of the ensemble's answer over all `predictors` (runtime.Predictor, one per member).

    `target`: the answer to explain (a label, or {"start", "end"} character offsets for QA); None explains the
    ensemble's own answer (mean probabilities / best mean span, the heads' default aggregation) and adds the
    members' predictions under "predictions" (from the same forward batch for classification), so a caller
    needs no separate prediction call. Returns {"method", "target", "delta", "steps", "words" (QA gradient
    methods also "end_words"), "members", "legend", and for occlusion "probability" (the ensemble's probability
    of the answer) and "peak" (the largest probability change one word makes)}.
    """
    check_method(method)
    if not predictors:
        raise ValueError("an ensemble explanation needs at least one model")
    predictors = SharedEnsemble.of(predictors)  # members that share a frozen trunk run it once per batch
    spec = predictors[0].spec
    predictions = None
    if target is None and (method != OCCLUSION or spec.occlusion_needs_target):
        predictions = [per_input[0] for per_input in predictors.predict([model_input])]
        target = spec.ensemble_target(predictions)
    if method == OCCLUSION:
        result = occlusion(predictors, model_input, target)
        predictions = result.pop("predictions", None) or predictions
    else:
        result = _gradient_ensemble(predictors, model_input, method, target)
    result["members"] = len(predictors)
    if isinstance(target, dict):  # a QA span: say which one was explained
        result["span"] = [target["start"], target["end"]]
    result["legend"] = legend(method, result, spec, len(predictors))
    if predictions is not None:
        result["predictions"] = predictions
    return result


def explain(predictor: Any, model_input: dict[str, str], method: str, target: Any) -> dict[str, Any]:
    """One model's word attributions for `target` (occlusion: the ensemble of this one model)."""
    check_method(method)
    if method == OCCLUSION:
        result = occlusion([predictor], model_input, target)
        result.pop("predictions", None)
        return result
    return gradient(predictor, model_input, method, target)


def legend(method: str, result: dict[str, Any], spec: Any, members: int) -> str:
    what = f"“{result['target']}”" if spec.labelled else "its answer"
    models = f"{members} model{'s' if members != 1 else ''}"
    if method == OCCLUSION:
        confidence = result.get("probability")
        at = f" ({confidence:.0%})" if confidence is not None else ""
        grouped = result.get("group", 1)
        groups = (f" (the given text's words in groups of up to {grouped}, deleted together, share their group's "
                  "colour)" if grouped > 1 else "")
        return (f"green = removing this word lowers the models' confidence in {what}{at}; red = removing it raises "
                f"it; method: word occlusion over {models}{groups}")
    named = METHOD_SPECS[method]
    kind = f"{named.about} (an approximation: its sign can mislead)" if named.approximate else named.about
    return f"green = pushes the models' score towards {what}; red = pushes away from it; method: {kind}, averaged over {models}"


# -- occlusion --------------------------------------------------------------------------------------


def occlusion(predictors: Sequence[Any], model_input: dict[str, str], target: Any) -> dict[str, Any]:
    """Delete each word in turn; one forward batch per member (members that share a frozen trunk run it once
    for the batch, `zoo.trunk`); score = drop in the mean answer probability."""
    ensemble = SharedEnsemble.of(predictors)
    spec = ensemble[0].spec
    per_member: dict[int, tuple] = {}
    for group in ensemble.groups:
        lead = ensemble[group.lead]
        with lead.lock:  # the tokenizer is not shared between threads mid-call
            plan = _occlusion_plan(lead, model_input, target)
        outputs, exact = _group_outputs(ensemble, group, plan)
        for m in group.members:
            per_member[m] = _occlusion_probs(ensemble[m], plan, outputs[m], model_input, exact.get(m))
    table: list[torch.Tensor] = []  # per member: [rows, candidates] probabilities, row 0 the unchanged input
    exact_table: list[torch.Tensor] = []  # per member: float32 probabilities of the unchanged input, when run
    words: list[dict[str, Any]] | None = None
    keys: list[tuple[int, int, int]] = []
    predictions = []
    for m in range(len(ensemble)):
        member_words, probs, prediction, exact_probs = per_member[m]
        if exact_probs is not None:
            exact_table.append(exact_probs)
        member_keys = [(w["segment"], w["start"], w["end"]) for w in member_words]
        if words is None:
            words, keys = member_words, member_keys
        elif member_keys != keys:  # another tokenizer or truncation: align rows on the first member's words
            index = {k: i + 1 for i, k in enumerate(member_keys)}
            probs = torch.stack([probs[0]] + [probs[index[k]] if k in index else probs[0] for k in keys])
        table.append(probs)
        predictions.append(prediction)
    mean = torch.stack(table).mean(0)  # [rows, candidates]
    # drops are read within one precision (row 0 of the same batch); the answer and the confidence shown come
    # from the float32 pass when the batch ran in lower precision
    exact_mean = torch.stack(exact_table).mean(0) if exact_table and len(exact_table) == len(table) else mean[0]
    if spec.labelled:
        labels = ensemble[0].labels
        column = int(exact_mean.argmax()) if target is None else labels.index(target)
        name = labels[column]
    else:
        column, name = 0, spec.explained_name
    drops = (mean[0, column] - mean[1:, column]).tolist()
    assert words is not None
    peak = max((abs(d) for d in drops), default=0.0)
    out_words = normalise([{"word": w["word"], "score": d, "segment": w["segment"]}
                           for w, d in zip(words, drops, strict=True)])
    probability = exact_mean[column]
    result = {"method": OCCLUSION, "target": name, "delta": None, "steps": 1, "words": out_words,
              "probability": float(probability), "peak": float(peak),
              "group": max((w["group"] for w in words), default=1)}
    if target is None and all(p is not None for p in predictions):
        result["predictions"] = predictions
    return result


def _occlusion_plan(predictor: Any, model_input: dict[str, str], target: Any) -> dict[str, Any]:
    """The perturbed batch of one input (row 0 unchanged, one row per word or group of words) and what is
    needed to read the answer's probability from its output: the same for every member that encodes alike."""
    spec = predictor.spec
    encoding = predictor.encode([model_input], offsets=True)
    offsets, seq_ids = encoding["offset_mapping"][0].tolist(), encoding.sequence_ids(0)
    texts = predictor.segments(model_input)
    words = word_groups(offsets, seq_ids, texts)
    args = _model_inputs(predictor, encoding)  # on the CPU: the batch is built there, then moved
    protected: set[int] = set()
    explained = None
    if target is not None:
        explained = spec.occlusion_target(target, predictor.labels, offsets, seq_ids)
        protected = set(explained.protected)
    mask_id = predictor.tokenizer.mask_token_id
    pad_id = predictor.tokenizer.pad_token_id or 0
    features = plan_features(words, protected, spec.occlusion_max_features(len(seq_ids)),
                             single_segment=spec.occlusion_single_segment(model_input))
    rows = [list(range(len(seq_ids)))]  # kept positions per row; row 0 keeps everything
    replaced: list[set[int]] = [set()]
    for feature in features:
        tokens = {t for i in feature for t in words[i]["tokens"]}
        if protected & tokens:  # the QA answer: masked in place (kept if the tokenizer has no [MASK])
            rows.append(rows[0])
            replaced.append(tokens if mask_id is not None else set())
        else:
            rows.append([t for t in rows[0] if t not in tokens])
            replaced.append(set())
    feature_of = {i: f for f, feature in enumerate(features) for i in feature}
    for i, w in enumerate(words):
        w["group"] = len(features[feature_of[i]])
    return {"encoding": encoding, "seq_ids": seq_ids, "words": words, "rows": rows, "explained": explained,
            "feature_of": feature_of, "batch": _batch(args, rows, replaced, mask_id, pad_id)}


def _occlusion_probs(predictor: Any, plan: dict[str, Any], output: Any, model_input: dict[str, str],
                     exact: Any = None):
    """(words, probabilities [1 + n_words, candidates], this member's prediction or None, float32 probabilities
    of the unchanged input or None) from one member's output for the plan's batch; `exact`: its float32 output
    for the unchanged input when the batch ran in lower precision (the prediction is decoded from it)."""
    words, explained = plan["words"], plan["explained"]
    prediction = exact_probs = None
    output, exact = _on_cpu(output), _on_cpu(exact)
    if explained is None:  # classification without a target: all labels' probabilities, prediction from row 0
        probs = torch.softmax(output.logits.float(), dim=-1)
        first = exact if exact is not None else type(output)(logits=output.logits[:1])
        prediction = predictor.spec.decode(plan["encoding"], first, [model_input], predictor.labels)[0]
        if exact is not None:
            exact_probs = torch.softmax(exact.logits[0].float(), dim=-1)
    else:
        probs = explained.probability(output, plan["rows"], plan["seq_ids"])
    feature_of = plan["feature_of"]
    # one row per word (a word of a group gets its group's row): the caller works word by word
    probs = torch.cat([probs[:1], probs[1:][torch.tensor([feature_of[i] for i in range(len(words))], dtype=torch.long)]]) \
        if words else probs[:1]
    return words, probs, prediction, exact_probs


def _group_outputs(ensemble: SharedEnsemble, group: Any, plan: dict[str, Any]) -> tuple[dict[int, Any], dict[int, Any]]:
    """The group's outputs for the plan's batch, and (when the batch ran in lower precision on the CPU) its
    float32 outputs for the unchanged input. On a GPU the batch autocasts to the card's precision, as
    predictions do. A model that cannot run in lower precision (DeBERTa v1 under autocast: "value cannot be
    converted to type BFloat16") runs in float32, from then on (`autocast_ok`)."""
    lead = ensemble[group.lead]
    where = _device_of(lead)
    low = getattr(lead, "autocast_ok", True)
    try:
        if where.type != "cpu":
            batch = zoo_device.to_device(plan["batch"], where)
            with zoo_device.autocast(where, zoo_device.amp_dtype(where) if low else None):
                return ensemble.forward(group, batch), {}
        dtype = occlusion_dtype(len(plan["rows"])) if low else None
        outputs = ensemble.forward(group, plan["batch"], autocast=dtype)
        # the members' own answers (a verdict) always come from a float32 pass over the unchanged input
        exact = ensemble.forward(group, _first_row(plan["batch"])) \
            if dtype is not None and plan["explained"] is None else {}
        return outputs, exact
    except RuntimeError as exc:
        if not low or isinstance(exc, torch.OutOfMemoryError) or (where.type == "cpu" and dtype is None) \
                or (where.type != "cpu" and zoo_device.amp_dtype(where) is None):
            raise
        for m in group.members:
            ensemble[m].autocast_ok = False
        return _group_outputs(ensemble, group, plan)


def _device_of(predictor: Any) -> torch.device:
    return getattr(predictor, "device", None) or torch.device("cpu")


def _model_inputs(predictor: Any, encoding: Any) -> dict[str, torch.Tensor]:
    """The encoding's tensors the model takes, on the CPU (`runtime.Predictor.model_inputs`)."""
    inputs = getattr(predictor, "model_inputs", None)
    return inputs(encoding) if inputs is not None else predictor.model_args(encoding)


def _on_cpu(output: Any) -> Any:
    """A model output's tensors on the CPU (nothing to do for a CPU output)."""
    if output is None:
        return None
    tensors = [v for v in output.values() if isinstance(v, torch.Tensor)] if hasattr(output, "values") else []
    if all(t.device.type == "cpu" for t in tensors):
        return output
    return type(output)(**{k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in output.items()})


def _first_row(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The unchanged input alone (row 0 of an occlusion batch, without the padding other rows needed)."""
    n = int(batch["attention_mask"][0].sum())
    return {k: v[:1, :n] for k, v in batch.items()}


def plan_features(words: list[dict[str, Any]], protected: set[int], budget: int,
                  single_segment: int = 0) -> list[list[int]]:
    """What occlusion deletes, row by row: one word per row while there are at most `budget` words; beyond
    that (a long QA passage, a long NLI premise) the words of the writer's own text (`single_segment`: the QA
    question, the NLI hypothesis) stay single and the given text's words are deleted in contiguous groups,
    never across the answer, so that the rows stay within the budget."""
    if len(words) <= budget:
        return [[i] for i in range(len(words))]
    answer = [i for i, w in enumerate(words) if protected & set(w["tokens"])]
    singles = [i for i, w in enumerate(words) if w["segment"] == single_segment and i not in answer]
    if len(singles) > budget * 3 // 4:  # a very long question: grouped as well, leaving rows for the passage
        singles = []
    rest = [i for i in range(len(words)) if i not in answer and i not in singles]
    slots = max(budget - len(singles) - (1 if answer else 0), 1)
    size = -(-len(rest) // slots)  # ceil
    features: list[list[int]] = [[i] for i in singles] + ([answer] if answer else [])
    run: list[int] = []
    for i in rest:
        breaks = run and (i != run[-1] + 1 or words[i]["segment"] != words[run[-1]]["segment"] or len(run) == size)
        if breaks:
            features.append(run)
            run = []
        run.append(i)
    if run:
        features.append(run)
    return sorted(features, key=lambda f: f[0])


def _batch(args: dict[str, torch.Tensor], rows: list[list[int]], replaced: list[set[int]], mask_id: int | None,
           pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=args["input_ids"].dtype)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long) if "token_type_ids" in args else None
    source = args["input_ids"][0]
    for r, (kept, masked) in enumerate(zip(rows, replaced, strict=True)):
        index = torch.tensor(kept, dtype=torch.long)
        row_ids = source[index].clone()
        if masked:
            for j, t in enumerate(kept):
                if t in masked:
                    row_ids[j] = mask_id
        ids[r, :len(kept)] = row_ids
        attention[r, :len(kept)] = 1
        if types is not None:
            types[r, :len(kept)] = args["token_type_ids"][0][index]
    batch = {"input_ids": ids, "attention_mask": attention}
    if types is not None:
        batch["token_type_ids"] = types
    return batch


def word_groups(offsets: list[list[int]], seq_ids: list[int | None],
                texts: tuple[str, str | None]) -> list[dict[str, Any]]:
    """Whitespace-delimited words (sub-words and attached punctuation joined) with their token positions."""
    words: list[dict[str, Any]] = []
    last_end, last_seg = -1, None
    for position, ((start, end), seg) in enumerate(zip(offsets, seq_ids, strict=True)):
        if seg is None or end <= start:
            continue
        if seg == last_seg and start == last_end and words:
            words[-1]["end"] = end
            words[-1]["tokens"].append(position)
        else:
            words.append({"start": start, "end": end, "segment": seg, "tokens": [position]})
        last_end, last_seg = end, seg
    for w in words:
        w["word"] = (texts[w["segment"]] or "")[w["start"]:w["end"]]
    return words


# -- gradient methods -------------------------------------------------------------------------------


def _gradient_ensemble(predictors: Sequence[Any], model_input: dict[str, str], method: str,
                       target: Any) -> dict[str, Any]:
    return average_explanations([gradient(p, model_input, method, target) for p in predictors])


def average_explanations(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One explanation from several of the same input (one per member): word scores averaged, then scaled so
    the largest |score| is 1; the worst convergence delta; the rest from the first. Occlusion results carry
    their scale (`peak`), so their raw probability drops are averaged: the same map, exactly, as one
    `occlusion` over all the members (the mean drop of the mean probability)."""
    first = results[0]
    out = {k: v for k, v in first.items() if k not in ("words", "end_words", "probability", "peak")}
    out["delta"] = _worst([r.get("delta") for r in results])
    raw = all(r.get("peak") is not None for r in results)
    for key in ("words", "end_words"):
        if key not in first:
            continue
        merged = [dict(w) for w in first[key]]
        for i, w in enumerate(merged):
            w["score"] = sum(r[key][i]["score"] * (r["peak"] if raw else 1.0)
                             for r in results if len(r.get(key, [])) == len(merged)) / len(results)
        if raw and key == "words":
            out["peak"] = max((abs(w["score"]) for w in merged), default=0.0)
        out[key] = normalise(merged)
    if all(r.get("probability") is not None for r in results):
        out["probability"] = sum(r["probability"] for r in results) / len(results)
    return out


def gradient(predictor: Any, model_input: dict[str, str], method: str, target: Any) -> dict[str, Any]:
    """Attribute the logits that the predictor's head names for `target` (one word list per logit)."""
    encoding = predictor.encode([model_input], offsets=True)
    texts = predictor.segments(model_input)
    offsets, seq_ids = encoding["offset_mapping"][0].tolist(), encoding.sequence_ids(0)
    args = predictor.model_args(encoding)  # on the model's device
    explained = predictor.spec.explained_logits(target, predictor.labels, offsets, seq_ids)
    specials = _tokenizer_specials(getattr(predictor, "tokenizer", None))
    with predictor.lock:
        results = {key: attribute(predictor.model, args, pick, method, specials)
                   for key, pick in explained.logits.items()}
    first = next(iter(results.values()))
    return {"method": method, "target": explained.name, "delta": _worst([r["delta"] for r in results.values()]),
            "steps": first["steps"], **{key: merge_words(r["scores"], offsets, seq_ids, texts) for key, r in results.items()}}


def _worst(deltas: list[float | None]) -> float | None:
    return None if any(d is None for d in deltas) else max(abs(d) for d in deltas)


def attribute(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable, method: str,
              specials: dict[str, Any] | None = None) -> dict[str, Any]:
    """`specials`: the tokenizer's pad and boundary token ids (`_tokenizer_specials`), for a baseline."""
    if method == INTEGRATED_GRADIENTS:
        return integrated_gradients(model, args, pick, specials)
    return GRADIENTS[method](model, args, pick)


def _tokenizer_specials(tokenizer: Any) -> dict[str, Any] | None:
    """The pad id and the ids of the tokens that frame a text ([CLS]/[SEP], <s>/</s>) by the tokenizer, which
    knows them for every family (a config often does not); None without a tokenizer."""
    if tokenizer is None:
        return None
    ids = {getattr(tokenizer, f"{name}_token_id", None) for name in ("cls", "sep", "bos", "eos")}
    return {"pad": getattr(tokenizer, "pad_token_id", None), "special": {i for i in ids if isinstance(i, int)}}


def input_x_gradient(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable) -> dict[str, Any]:
    """Gradient of the target logit times the word embedding, summed over the hidden size."""
    embeds = model.get_input_embeddings()(args["input_ids"]).detach().requires_grad_(True)
    rest = {k: v for k, v in args.items() if k != "input_ids"}
    logit = pick(model(inputs_embeds=embeds, **rest)).sum()
    (grad,) = torch.autograd.grad(logit, embeds)
    scores = (grad * embeds).sum(-1)[0].detach()
    return {"scores": scores.tolist(), "delta": None, "steps": 1}


def integrated_gradients(model: torch.nn.Module, args: dict[str, torch.Tensor], pick: Callable,
                         specials: dict[str, Any] | None = None) -> dict[str, Any]:
    """LayerIntegratedGradients over the word embeddings, from a baseline of [PAD] (special tokens kept)."""
    from captum.attr import LayerIntegratedGradients  # here: captum loads matplotlib, which only IG needs

    input_ids = args["input_ids"]
    rest_names = [k for k in ("attention_mask", "token_type_ids") if k in args]

    def forward(ids: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        return pick(model(input_ids=ids, **dict(zip(rest_names, rest, strict=True))))

    steps = ig_steps(input_ids.shape[1])
    lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    attributions, delta = lig.attribute(
        input_ids, baselines=baseline_ids(model, input_ids, specials), additional_forward_args=tuple(args[k] for k in rest_names),
        n_steps=steps, internal_batch_size=steps, return_convergence_delta=True,
    )
    return {"scores": attributions.sum(-1)[0].detach().tolist(), "delta": float(delta.abs().max()), "steps": steps}


# The gradient methods' functions, by name (occlusion, the default, is a branch of its own above).
GRADIENTS: dict[str, Callable[..., dict[str, Any]]] = {
    INPUT_X_GRADIENT: input_x_gradient,
    INTEGRATED_GRADIENTS: integrated_gradients,
}


def baseline_ids(model: torch.nn.Module, input_ids: torch.Tensor, specials: dict[str, Any] | None = None) -> torch.Tensor:
    """[PAD] everywhere but the framing tokens. The tokenizer's ids (`specials`) when given, else the config's
    (BERT's [CLS]/[SEP] when it names none)."""
    pad = specials["pad"] if specials and specials.get("pad") is not None else model.config.pad_token_id
    baseline = torch.full_like(input_ids, pad or 0)
    special = specials["special"] if specials and specials.get("special") else _special_ids(model)
    keep = torch.isin(input_ids, torch.tensor(sorted(special), device=input_ids.device)) if special \
        else torch.zeros_like(input_ids, dtype=torch.bool)
    return torch.where(keep, input_ids, baseline)


def _special_ids(model: torch.nn.Module) -> set[int]:
    cfg = model.config
    ids = {getattr(cfg, name, None) for name in ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id")}
    return {i for i in ids if i is not None} or {101, 102}  # BERT [CLS]/[SEP] when the config does not say


def merge_words(scores: list[float], offsets: list[list[int]], seq_ids: list[int | None],
                texts: tuple[str, str | None]) -> list[dict[str, Any]]:
    """Sum sub-word scores into whitespace-delimited words, then scale so the largest |score| is 1."""
    words: list[dict[str, Any]] = []
    last_end, last_seg = -1, None
    for score, (start, end), seg in zip(scores, offsets, seq_ids, strict=True):
        if seg is None or end <= start:
            continue  # special tokens and padding
        if seg == last_seg and start == last_end and words:
            words[-1]["end"], words[-1]["score"] = end, words[-1]["score"] + score
        else:
            words.append({"start": start, "end": end, "score": score, "segment": seg})
        last_end, last_seg = end, seg
    return normalise([{"word": (texts[w["segment"]] or "")[w["start"]:w["end"]], "score": w["score"],
                       "segment": w["segment"]} for w in words])


def normalise(words: list[dict[str, Any]]) -> list[dict[str, Any]]:
    peak = max((abs(w["score"]) for w in words), default=0.0)
    for w in words:
        w["score"] = float(w["score"] / peak) if peak > 0 else 0.0
    return words
