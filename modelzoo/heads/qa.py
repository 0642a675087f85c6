"""Extractive QA: the answer is a span of the passage, found by start and end logits over its tokens.

Model input: {"question": ..., "context": the passage}; target and prediction: {"text", "start"} character
offsets into the passage (predictions also carry "end", "score" and their `candidates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import AutoModelForQuestionAnswering

from modelzoo.heads.base import Example, ExplainedLogits, HeadSpec

MAX_ANSWER_TOKENS = 30
N_BEST = 10


class QAHead(HeadSpec):
    name = "qa"
    auto_model = AutoModelForQuestionAnswering
    architecture_suffix = "ForQuestionAnswering"
    default_max_length = 256
    default_strategy = "best_mean_span"
    target_keys = ("start_positions", "end_positions")
    labelled = False
    probabilities = False
    small_data_epochs = 3  # the slow head (long inputs): fewer epochs keep the demo affordable
    truncation = "only_second"  # never cut the question; cut the passage
    needs_offsets = True

    def features(self, tokenizer: Any, examples: Sequence[Example], labels: Sequence[str],
                 max_length: int) -> list[dict[str, Any]]:
        features = []
        for ex in examples:
            question, passage = self.segments(ex.model_input)
            encoding = tokenizer(question, passage, truncation=self.truncation, max_length=max_length,
                                 return_offsets_mapping=True)
            offsets, seq_ids = encoding.pop("offset_mapping"), encoding.sequence_ids()
            start, end = ex.target["start"], ex.target["start"] + len(ex.target["text"])
            passage_tokens = [i for i, s in enumerate(seq_ids) if s == 1]
            if passage_tokens and offsets[passage_tokens[0]][0] <= start and end <= offsets[passage_tokens[-1]][1]:
                s, e = char_span_to_tokens(offsets, seq_ids, start, end)
            else:
                s = e = 0  # the answer was truncated away: point at [CLS]
            features.append({**dict(encoding), "start_positions": s, "end_positions": e})
        return features

    def segments(self, model_input: dict[str, str]) -> tuple[str, str]:
        return model_input["question"], model_input["context"]

    def decode(self, encoding: Any, output: Any, inputs: Sequence[dict[str, str]],
               labels: Sequence[str]) -> list[dict[str, Any]]:
        return [_span(encoding, output, row, model_input) for row, model_input in enumerate(inputs)]

    def target_of(self, prediction: dict[str, Any]) -> dict[str, int]:
        return {"start": prediction["start"], "end": prediction["end"]}

    def explained_logits(self, target: dict[str, int], labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> ExplainedLogits:
        start_tok, end_tok = char_span_to_tokens(offsets, seq_ids, target["start"], target["end"])
        return ExplainedLogits("start", {"words": lambda o: o.start_logits[:, start_tok],
                                         "end_words": lambda o: o.end_logits[:, end_tok]})


def _span(encoding: Any, output: Any, row: int, model_input: dict[str, str]) -> dict[str, Any]:
    candidates = best_spans(
        output.start_logits[row], output.end_logits[row], encoding.sequence_ids(row),
        encoding["offset_mapping"][row].tolist(), model_input["context"],
    )
    best = candidates[0] if candidates else {"text": "", "start": 0, "end": 0, "score": 0.0}
    return {**best, "candidates": candidates}


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, sequence_ids: list[int | None],
               offsets: list[list[int]], context: str, n_best: int = N_BEST) -> list[dict[str, Any]]:
    """Top spans inside the passage, scored p(start) * p(end) over passage tokens."""
    passage = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not passage:
        return []
    index = torch.tensor(passage)
    log_start = torch.log_softmax(start_logits.float()[index], dim=0)
    log_end = torch.log_softmax(end_logits.float()[index], dim=0)
    k = min(20, len(passage))
    spans = []
    for si in torch.topk(log_start, k).indices.tolist():
        for ei in torch.topk(log_end, k).indices.tolist():
            if si <= ei < si + MAX_ANSWER_TOKENS:
                spans.append((float(log_start[si] + log_end[ei]), passage[si], passage[ei]))
    spans.sort(reverse=True)
    out = []
    for logp, s, e in spans[:n_best]:
        start, end = offsets[s][0], offsets[e][1]
        out.append({"text": context[start:end], "start": start, "end": end, "score": float(torch.exp(torch.tensor(logp)))})
    return out


def char_span_to_tokens(offsets: list[list[int]], seq_ids: list[int | None], start: int, end: int) -> tuple[int, int]:
    """Token indices in the passage (segment 1) covering characters [start, end)."""
    passage = [i for i, s in enumerate(seq_ids) if s == 1] or [0]
    first = next((i for i in passage if offsets[i][1] > start), passage[-1])
    last = next((i for i in reversed(passage) if offsets[i][0] < end), first)
    return first, max(first, last)
