"""The writing assistant: a language model suggests examples for the shown context and intended label; the round's
live ensemble says what it makes of each before the writer sees it (docs/assistant.md, docs/llm.md).

Flow. `annotation.services.ask_assistant` (the web request) checks the writer may submit to the task now, saves a pending
`Suggestion` and queues `annotation.suggest` (`annotation.jobs`: a job: a Celery worker with a broker; a thread of the web process
in the embedded default, so the local model is loaded once and no request ever waits for it). The job prompts
the task's provider (`run` here; `modelzoo.llm.provider_for`) with the task's instructions, a few labelled examples
each with its context (the round's verified fooling examples, then the task's items), and then the shown context and
the intended label (`prompt_for`, `zoo.llm.prompts.suggestion_prompt`: people's texts enter it as data only), keeps
the usable candidates (`_usable`: tidied, plain text under the site's text rule), scores them in one batch with the
live ensemble, and stores them with where the time went (`usage.phases`). The page polls.

What a candidate's verdict means. The model was asked for a label; nobody has checked that its text has it (a small
model often writes another). So a candidate records whether the models' answer differs from the label asked for
(`models_disagree`), never that it fooled them: the page says it fools them only if a reader agrees.

Failures. A provider that is down, slow, over its quota or misconfigured turns the request `failed` with a
sentence for the writer; so does anything else that goes wrong in the job. The create flow never waits for it, and
a submission never depends on it. A round without a deployed ensemble still gets its suggestions, without verdicts
("the models are still training").

Provenance (`provenance`). A submission may name the suggestion request the writer had open (and the candidate
they picked). The server compares the submitted text with the candidates: identical → as suggested; picked or
close (an edit distance of at most half the candidate) → edited, with the distance; otherwise written from
scratch with suggestions shown. Exports and the dataset card carry it; the round dashboard compares the groups.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.db.models import F
from django.utils import timezone
from rapidfuzz.distance import Levenshtein

from annotation import scoring
from annotation.models import Assistance, Example, Suggestion
from dynabench_site import errors
from dynabench_site.text import text_problem
from modelzoo.llm import provider_for
from study import arms
from tasks.kinds import InputError
from tasks.models import LabeledItem, Round, Task
from zoo.llm.base import ProviderError, Usage
from zoo.llm.prompts import SuggestionPrompt, clean_candidates, label_word, plain_text, safe_text, suggestion_prompt
from zoo.types import BackendError, NoEnsembleYet

log = logging.getLogger(__name__)

# What the writer reads when the assistant cannot help now, by the provider's failure kind.
UNAVAILABLE = {
    "down": "The writing assistant is unavailable right now (its language model does not answer). "
            "Write your own example: submitting works as usual.",
    "timeout": "The writing assistant took too long to answer. Try again, or write your own example: "
               "submitting works as usual.",
    "quota": "The writing assistant has reached its usage limit for now. Write your own example: submitting works "
             "as usual.",
    "bad_response": "The writing assistant's language model answered something unusable. Try again, or write your "
                    "own example.",
    "config": "The writing assistant is not set up correctly ({detail}); the task's owner can fix it in the task's "
              "settings. Write your own example: submitting works as usual.",
}
GENERATION_TRIES = 3  # generations per request when the first gives nothing usable
NOTHING_USABLE = "The language model wrote nothing usable this time. Ask again, or write your own example."
CRASHED = "The writing assistant failed this time. Ask again, or write your own example: submitting works as usual."
NOT_QUEUED = ("The writing assistant could not start (the job queue does not answer). Write your own example: "
              "submitting works as usual.")
MAX_SHOTS_POOL = 50  # the few-shot examples are chosen among this many of each source (fooling examples, items)


@dataclass(frozen=True)
class Provenance:
    suggestion: Suggestion | None
    assistance: str
    suggested_text: str
    edit_distance: int | None


def enabled(task: Task, user=None) -> bool:
    """Whether the task offers the assistant (to `user`, when given: a study arm may not, study.arms)."""
    config = task.typed_config
    on = bool(config.assistant.enabled) and task.kind_impl.target_is_label and len(config.input_fields) == 1
    return on and (user is None or arms.offers_assistant(task, user))


_warming: dict[str, threading.Thread] = {}
_warming_lock = threading.Lock()


def warm_up(task: Task) -> threading.Thread | None:
    """Load the task's local language model in a background thread of this process, and have it read the task's
    prompt once (the part every request shares: llama.cpp keeps it in its slots), so that the writer's first
    "Suggest examples" waits for neither (measured on the served demo while the demo models train: the first
    request took 28 s, the next ones 3-4 s). Once per process and task; for a page that offers the assistant, when
    it is shown, through `annotation.jobs.warm_assistant` (only where the job runs in this process). An HTTP provider
    has nothing to load (None)."""
    if not enabled(task) or task.typed_config.assistant.provider.provider != "local":
        return None
    try:
        provider = provider_for(task.typed_config.assistant.provider)
    except ProviderError:
        return None
    key = f"{provider.model}:{task.pk}"
    with _warming_lock:
        if key not in _warming:
            # the prompt is read here, in the page's request (its database connection); the thread only computes
            round_, labels = task.current_round, list(getattr(task.typed_config, "labels", []))
            prompt = None
            if round_ is not None and labels:
                blank = {name: "" for name in task.typed_config.context_fields} or None
                prompt = _prompt(task, round_, blank, labels[0])[0]
            _warming[key] = threading.Thread(target=_warm, args=(provider, prompt,
                                                                 task.typed_config.assistant.candidates),
                                             daemon=True, name="assistant-warm-up")
            _warming[key].start()
        return _warming[key]


def _after_warm_up(provider, task: Task, timeout_s: float = 60.0) -> None:
    """A request that comes while its task's warm-up still runs waits for it instead of doing the same work beside
    it (measured: the first request then took 36 s, both reading the whole prompt in every slot at once)."""
    thread = _warming.get(f"{provider.model}:{task.pk}")
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        thread.join(timeout_s)


def _warm(provider, prompt: SuggestionPrompt | None, n: int) -> None:
    try:
        provider.warm()
        if prompt is not None:  # one token per slot: the slots keep the prompt's common part (llama.cpp's cache)
            provider.generate(prompt.user, system=prompt.system, prefix=prompt.prefix, stop=list(prompt.stop),
                              n=n, max_tokens=1, temperature=0.0, seed=0)
    except ProviderError as exc:  # the first request says what is wrong, with its sentence for the writer
        log.warning("the writing assistant's model could not be loaded: %s", exc)
    except Exception:  # a warm-up is a courtesy: the request itself reports real failures
        log.exception("warming up the writing assistant failed")


def check_enabled(task: Task, user=None) -> None:
    if not task.typed_config.assistant.enabled:
        raise errors.Conflict("the writing assistant is off for this task", field="assistant")
    if not enabled(task):
        raise errors.Conflict("the writing assistant suggests texts for labelled tasks with one input field; this "
                              "task's kind cannot use it", field="assistant")
    if user is not None:
        arms.check_assistant(task, user)  # the writer's study arm works without it: 409


# --- the job (annotation.jobs.suggest) ------------------------------------------------------------------------


def run(suggestion_id: int) -> str:
    """The job: write, clean, check and score the candidates of one request. Whatever goes wrong, the request
    ends ready or failed with a sentence for the writer, never pending for ever (the page would wait)."""
    try:
        return _run(suggestion_id)
    except Exception:
        log.exception("suggestion %s: the job failed", suggestion_id)
        _fail(suggestion_id, CRASHED)
        return "failed"


def _run(suggestion_id: int) -> str:
    suggestion = (Suggestion.objects.select_related("round__task", "context")
                  .filter(pk=suggestion_id, state=Suggestion.State.PENDING).first())
    if suggestion is None:
        return "skipped"
    started, cpu = time.perf_counter(), time.process_time()
    phases: dict[str, Any] = {"queued_s": round((timezone.now() - suggestion.created_at).total_seconds(), 3),
                              "tries": []}
    task = suggestion.round.task
    config = task.typed_config
    settings_ = config.assistant
    try:
        provider = provider_for(settings_.provider)
        waited = time.perf_counter()
        _after_warm_up(provider, task)
        phases["warm_up_wait_s"] = round(time.perf_counter() - waited, 3)
        prompt, shots = prompt_for(suggestion)
        phases["prompt_s"] = round(time.perf_counter() - started - phases["warm_up_wait_s"], 3)
        texts: list[str] = []
        usage = None
        # A small model sometimes writes nothing usable (descriptions, copies): one more try before giving up
        for attempt in range(GENERATION_TRIES):
            seed = None if settings_.seed is None else settings_.seed + attempt * settings_.candidates
            called = time.perf_counter()
            generation = provider.generate(prompt.user, system=prompt.system, prefix=prompt.prefix,
                                           stop=list(prompt.stop), n=settings_.candidates,
                                           max_tokens=settings_.max_tokens, temperature=settings_.temperature,
                                           seed=seed)
            # the call's wall time beside what the provider counts as generating (the difference: loading it)
            phases["tries"].append({"wall_s": round(time.perf_counter() - called, 3),
                                    "generation_s": round(generation.usage.seconds, 3)})
            usage = generation.usage if usage is None else _plus(usage, generation.usage)
            texts = _usable([*texts, *generation.texts], _context_fields(task, suggestion), shots,
                            config.max_input_chars)[: settings_.candidates]
            if texts:
                break
        generation.usage = usage
    except ProviderError as exc:
        log.warning("suggestion %s: %s (%s)", suggestion_id, exc, exc.kind)
        _fail(suggestion_id, UNAVAILABLE[exc.kind].format(detail=exc.message))
        return "failed"
    if not texts:
        _fail(suggestion_id, NOTHING_USABLE, usage=_usage(generation.usage, phases, started, cpu),
              model=plain_text(generation.model)[:200])
        return "failed"
    scoring_started = time.perf_counter()
    candidates = _scored(task, suggestion, texts)
    phases["scoring_s"] = round(time.perf_counter() - scoring_started, 3)
    Suggestion.objects.filter(pk=suggestion_id, state=Suggestion.State.PENDING).update(
        state=Suggestion.State.READY, candidates=candidates, model=plain_text(generation.model)[:200], shots=len(shots),
        usage=_usage(generation.usage, phases, started, cpu), ready_at=timezone.now())
    return "ready"


def _usage(usage: Usage, phases: dict[str, Any], started: float, cpu: float) -> dict[str, Any]:
    """What the request cost (tokens, seconds, calls) and where its time went (`phases`: waiting in the queue, the
    prompt, each generation try, scoring the candidates; the job's own total, and the CPU seconds its process
    used meanwhile, a local model's threads included: far below the wall time, the machine was busy)."""
    return {**usage.as_dict(), "phases": {**phases, "job_s": round(time.perf_counter() - started, 3),
                                          "process_cpu_s": round(time.process_time() - cpu, 3)}}


def prompt_for(suggestion: Suggestion) -> tuple[SuggestionPrompt, list[dict[str, Any]]]:
    """The prompt the job sends for a request, and the few-shot examples in it (`zoo.llm.prompts`: the examples and
    the context are read as data there)."""
    return _prompt(suggestion.round.task, suggestion.round, _context_fields(suggestion.round.task, suggestion),
                   suggestion.target)


def _prompt(task: Task, round_: Round, context: dict[str, str] | None, target: Any
            ) -> tuple[SuggestionPrompt, list[dict[str, Any]]]:
    config = task.typed_config
    shots = _shots(task, round_, target, config.assistant.examples)
    prompt = suggestion_prompt(config.instructions or task.description, context, _label(task, target),
                               _label_words(task), shots, what=config.input_fields[0].replace("_", " "))
    return prompt, shots


def _usable(texts: list[str], context: dict[str, str] | None, shots: list[dict[str, Any]],
            max_chars: int) -> list[str]:
    """What may be stored and shown of a model's answers: `clean_candidates` (tidied; no markup, links, control or
    format characters; no descriptions, copies or duplicates; at most the task's length), then the site's text
    rule (`dynabench_site.text`), as for anything a person writes."""
    kept = clean_candidates(texts, context=context, examples=[shot["text"] for shot in shots], max_chars=max_chars)
    return [text for text in kept if text_problem(text) is None]


def _plus(a: Usage, b: Usage) -> Usage:
    return Usage(prompt_tokens=a.prompt_tokens + b.prompt_tokens, completion_tokens=a.completion_tokens +
                 b.completion_tokens, seconds=a.seconds + b.seconds, calls=a.calls + b.calls)


def not_queued(suggestion_id: int) -> None:
    """The job could not be queued (the broker is down): the request fails at once, with the reason."""
    _fail(suggestion_id, NOT_QUEUED)


def _fail(suggestion_id: int, message: str, **fields: Any) -> None:
    # a provider's own words may be part of the message: plain text, as any candidate
    Suggestion.objects.filter(pk=suggestion_id, state=Suggestion.State.PENDING).update(
        state=Suggestion.State.FAILED, error=plain_text(message)[:2000], ready_at=timezone.now(), **fields)


def _scored(task: Task, suggestion: Suggestion, texts: list[str]) -> list[dict[str, Any]]:
    """Each candidate with the live ensemble's verdict (one batch); without verdicts while the models train or the
    model server is down (the candidates are still worth showing)."""
    field = task.typed_config.input_fields[0]
    payload = suggestion.context.payload if suggestion.context else {}
    inputs = [task.kind_impl.model_input(task.typed_config, payload, {field: text}) for text in texts]
    try:
        ensemble = arms.ensemble_for(task, suggestion.author_id)  # the writer's arm's ensemble, if it has one
        verdicts = scoring.predict(suggestion.round, inputs, explain=False,
                                   **({"ensemble": ensemble} if ensemble else {}))
    except NoEnsembleYet:
        return [{"text": t, "models_disagree": None, "verdict_error": "the models are still training"} for t in texts]
    except BackendError as exc:
        log.warning("suggestion %s: scoring the candidates failed: %s", suggestion.pk, exc)
        return [{"text": t, "models_disagree": None, "verdict_error": "the models could not score it now"}
                for t in texts]
    # Whether the models' answer differs from the label asked for, by the kind's own rule (the verdict seam): not a
    # fool, since no person has checked that the text has that label (a small model often writes another); the page
    # says so, and the flag is named for it.
    return [{"text": text, **scoring.verdict_of(task, suggestion.target, v).record(flag="models_disagree")}
            for text, v in zip(texts, verdicts, strict=True)]


def _context_fields(task: Task, suggestion: Suggestion) -> dict[str, str] | None:
    if suggestion.context is None:
        return None
    return {k: str(v) for k, v in suggestion.context.payload.items() if k in task.typed_config.context_fields}


def _label(task: Task, target: Any) -> str:
    return task.kind_impl.target_label(target)


def _label_words(task: Task) -> dict[str, str]:
    return dict(task.typed_config.opponent.label_words)


def _shots(task: Task, round_: Round, target: Any, limit: int) -> list[dict[str, Any]]:
    """Few-shot examples for the prompt: the round's verified fooling examples (newest first), then, while there
    are too few, labelled items of the task (base data, seeds); those with a context first (the prompt pairs each
    with its context), taken in turn from each label, the same whatever label is asked for (so a model server
    that caches prompt prefixes reuses them). Each is read as data (`safe_text`): one with nothing left after
    its markup, links and instruction-like lines are dropped is not used. `target` is kept for callers: the
    intended label is said in the prompt's last line, not by choosing examples."""
    if limit <= 0:
        return []
    field = task.typed_config.input_fields[0]
    pool: list[dict[str, Any]] = []
    fooling = (Example.objects.collected().filter(round=round_, fooled=True, consensus=Example.Consensus.VERIFIED)
               .select_related("context").order_by("-id")[:MAX_SHOTS_POOL])
    for example in fooling:
        pool.append(_shot(task, example.context.payload if example.context else {}, example.input.get(field, ""),
                          _label(task, example.validated_label or example.target)))
    if len(pool) < MAX_SHOTS_POOL:
        items = LabeledItem.objects.filter(task=task, split=LabeledItem.Split.TRAIN).order_by(
            F("hardness_score").desc(nulls_last=True), "id")
        for item in items[:MAX_SHOTS_POOL]:
            text = (item.input or {}).get(field)
            if isinstance(text, str) and text:
                pool.append(_shot(task, item.context or {}, text, _label(task, item.target)))
    pool = [row for row in pool if safe_text(row["text"])]
    pool.sort(key=lambda row: "context" not in row)  # stable: with a context first
    labels = [_label(task, label) for label in getattr(task.typed_config, "labels", [])]
    by_label = {label: [row for row in pool if row["label"] == label] for label in labels}
    by_label.update({row["label"]: [] for row in pool if row["label"] not in by_label})
    for row in pool:
        if row["label"] not in labels:
            by_label[row["label"]].append(row)
    chosen: list[dict[str, Any]] = []
    for turn in range(limit):
        for rows in by_label.values():
            if turn < len(rows) and len(chosen) < limit:
                chosen.append(rows[turn])
    return chosen


def _shot(task: Task, payload: dict[str, Any], text: str, label: str) -> dict[str, Any]:
    row: dict[str, Any] = {"text": text, "label": label}
    context = {name: str(payload[name]) for name in task.typed_config.context_fields if payload.get(name)}
    if context:
        row["context"] = context
    return row


# --- provenance ---------------------------------------------------------------------------------------------


def provenance(user, task: Task, round_: Round, suggestion_id: Any, choice: Any, cleaned_input: dict[str, str]
               ) -> Provenance:
    """How a submission relates to the suggestions its writer had open (none named: without the assistant)."""
    if suggestion_id is None:
        return Provenance(None, Assistance.NONE, "", None)
    if not isinstance(suggestion_id, int) or isinstance(suggestion_id, bool):
        raise InputError("suggestion_id", "must be an integer id")
    suggestion = Suggestion.objects.filter(pk=suggestion_id, author=user).first()
    if suggestion is None:
        raise InputError("suggestion_id", f"suggestion {suggestion_id} is not one of yours")
    if suggestion.round_id != round_.pk:
        raise InputError("suggestion_id", f"suggestion {suggestion_id} was made for another round")
    texts = [c.get("text", "") for c in suggestion.candidates or []]
    if choice is not None and (not isinstance(choice, int) or isinstance(choice, bool)
                               or not 0 <= choice < len(texts)):
        raise InputError("suggestion_choice", f"must be the index of one of the {len(texts)} suggestions shown")
    if not texts:  # asked, got none (failed or still pending): the text is the writer's own
        return Provenance(suggestion, Assistance.OWN, "", None)
    written = cleaned_input[task.typed_config.input_fields[0]]
    distances = [Levenshtein.distance(written, t) for t in texts]
    index = choice if choice is not None else min(range(len(texts)), key=distances.__getitem__)
    distance = distances[index]
    if distance == 0:
        return Provenance(suggestion, Assistance.AS_SUGGESTED, texts[index], 0)
    if choice is not None or distance <= len(texts[index]) // 2:
        return Provenance(suggestion, Assistance.EDITED, texts[index], distance)
    return Provenance(suggestion, Assistance.OWN, "", None)


def describe(example: Example) -> dict[str, Any] | None:
    """An example's provenance as exports and the API show it (None: written without the assistant)."""
    if not example.assistance:
        return None
    suggestion = example.suggestion
    return {
        "mode": example.assistance,
        "suggested_text": example.suggested_text or None,
        "edit_distance": example.edit_distance,
        "provider": suggestion.provider if suggestion else None,
        "model": suggestion.model if suggestion else None,
        "suggestion_id": example.suggestion_id,
    }


def label_words_for(task: Task) -> dict[str, str]:
    """Every label of the task as the model is told it (for the page's legend)."""
    words = _label_words(task)
    return {label: words.get(label) or label_word(label) for label in getattr(task.typed_config, "labels", [])}
