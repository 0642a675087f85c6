"""Which targets answer a new conversation, and what the conversation records of them (docs/chat/conversations.md).

A slider task gives each conversation one target, a pairwise task two distinct ones. `chat.assignment` decides
which:

- "balanced" (the default): the targets this writer has met least on this task so far, ties broken at random. Over
  a writer's first conversations every target comes up before any comes up twice (as PRISM, where each writer
  meets each model), so a writer's taste does not pile onto one model, and each target's ratings come from many
  writers.
- "random": uniformly at random per conversation (and, for a pair, two distinct ones).

The slot order of a pair is shuffled too, so neither target is always "Model A" (the left answer is read first).

The snapshot (`Conversation.target_settings`) keeps, per target, what answered: the provider's name, the model's
name as the provider gives it, the endpoint (HTTP), the system prompt and the sampling settings. Generation reads
the snapshot, not the task's current settings: an owner who edits or removes a target mid-round does not change
what a running conversation talks to, and the dataset card says what really answered.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from chat.models import Conversation
from modelzoo.llm import provider_for
from tasks.kinds.base import LLMProviderSettings
from tasks.kinds.chat import ChatSettings, ChatTarget
from zoo.llm.base import ProviderError


def met_counts(writer, task, names: list[str]) -> Counter:
    """How many of this writer's conversations on `task` each target in `names` answered (0 for a new one)."""
    counts: Counter = Counter({name: 0 for name in names})
    for targets in Conversation.objects.filter(round__task=task, writer=writer).values_list("targets", flat=True):
        for name in set(targets or []):
            if name in counts:
                counts[name] += 1
    return counts


def choose_targets(writer, task, settings: ChatSettings, rng: random.Random | None = None) -> list[str]:
    """The target names of a new conversation, in slot order (slot 0 is "Model A")."""
    rng = rng or random.SystemRandom()
    names = [target.name for target in settings.targets]
    k = settings.answers_per_message()
    if settings.assignment == "random":
        chosen = rng.sample(names, k)
    else:
        counts = met_counts(writer, task, names)
        # least met first; among equals a random order (a fresh random key per name, per conversation)
        keys = {name: rng.random() for name in names}
        chosen = sorted(names, key=lambda name: (counts[name], keys[name]))[:k]
    rng.shuffle(chosen)
    return chosen


def snapshot(target: ChatTarget) -> dict[str, Any]:
    """What the conversation keeps of one target (the module's docstring says why)."""
    provider = target.provider
    try:
        model = provider_for(provider).model
    except ProviderError:  # a misconfigured endpoint: the answers fail with the reason, the owner fixes the task
        model = provider.model or ""
    return {
        "provider": provider.provider,
        "endpoint": provider.endpoint if provider.provider != "local" else "",
        "provider_model": provider.model,  # what the task asked the endpoint for ("" = the endpoint's own)
        "timeout_s": provider.timeout_s,
        "model": model,
        "system_prompt": target.system_prompt,
        "temperature": target.temperature,
        "max_tokens": target.max_tokens,
        "seed": target.seed,
    }


def snapshots(settings: ChatSettings, names: list[str]) -> dict[str, dict[str, Any]]:
    return {name: snapshot(settings.target(name)) for name in names}


def target_of(conversation: Conversation, name: str, settings: ChatSettings | None = None) -> ChatTarget:
    """The target `name` as the conversation recorded it: the snapshot, completed from the task's current settings
    for anything a snapshot lacks (conversations recorded with fewer fields)."""
    stored = dict((conversation.target_settings or {}).get(name) or {})
    current: ChatTarget | None = None
    if settings is not None:
        try:
            current = settings.target(name)
        except KeyError:
            current = None
    base = current.model_dump() if current is not None else {"name": name}
    provider = dict(base.get("provider") or {})
    if "provider" in stored:
        provider = {"provider": stored["provider"]}
        if stored["provider"] != "local":
            provider["endpoint"] = stored.get("endpoint") or "default"
            provider["model"] = stored.get("provider_model", "")
        if stored.get("timeout_s") is not None:
            provider["timeout_s"] = stored["timeout_s"]
    values = {**base, "name": name, "provider": LLMProviderSettings.model_validate(provider or {})}
    for key in ("system_prompt", "temperature", "max_tokens", "seed"):
        if key in stored:
            values[key] = stored[key]
    return ChatTarget.model_validate(values)
