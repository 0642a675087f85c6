"""Extractive QA: the answer is a span of the passage, found by start and end logits over its tokens.

Model input: {"question": ..., "context": the passage}; target and prediction: {"text", "start"} character
offsets into the passage (predictions also carry "end", "score" and their `candidates`). A span's score is its
probability among all valid spans of the passage (start <= end, at most MAX_ANSWER_TOKENS tokens): the softmax
of start logit + end logit over those spans, so a member's scores sum to at most 1 and read as a confidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import AutoModelForQuestionAnswering

from zoo.heads.base import Example, ExplainedLogits, HeadSpec, OcclusionTarget
from zoo.offsets import clean as clean_offsets
from zoo.offsets import needs_cleaning

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
    occlusion_needs_target = True  # the answer's tokens are masked, not deleted
    explained_name = "answer"
    # every block of all-MiniLM-L6-v2 (6) fine-tuned: held-out SQuAD F1 0.57 for one member against 0.29 with the
    # top 2 (docs/benchmarks/demo.md); bfloat16 where the CPU has it keeps that affordable (1.7x per update)
    recipe_defaults = {"top_layers": 6, "lr": 1e-4, "bf16": True}

    def features(self, tokenizer: Any, examples: Sequence[Example], labels: Sequence[str],
                 max_length: int) -> list[dict[str, Any]]:
        features = []
        cleaning = needs_cleaning(tokenizer)
        for ex in examples:
            question, passage = self.segments(ex.model_input)
            encoding = tokenizer(question, passage, truncation=self.truncation, max_length=max_length,
                                 return_offsets_mapping=True)
            offsets, seq_ids = encoding.pop("offset_mapping"), encoding.sequence_ids()
            if cleaning:  # BPE / SentencePiece: offsets on the text's own characters, as predictions read them
                offsets = clean_offsets(offsets, seq_ids, (question, passage))
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

    def ensemble_target(self, predictions: Sequence[dict[str, Any]]) -> dict[str, int]:
        """The span (character offsets) with the best mean score over members, as `best_mean_span` picks it."""
        totals: dict[tuple[int, int], float] = {}
        for prediction in predictions:
            for c in prediction.get("candidates") or [prediction]:
                totals[(c["start"], c["end"])] = totals.get((c["start"], c["end"]), 0.0) + c["score"]
        (start, end), _ = max(totals.items(), key=lambda item: (item[1], -item[0][0]))
        return {"start": start, "end": end}

    def occlusion_target(self, target: dict[str, int], labels: Sequence[str], offsets: list[list[int]],
                         seq_ids: list[int | None]) -> OcclusionTarget:
        start_tok, end_tok = char_span_to_tokens(offsets, seq_ids, target["start"], target["end"])

        def probability(output: Any, rows: list[list[int]], seq: list[int | None]) -> torch.Tensor:
            values = []
            for r, kept in enumerate(rows):
                passage = [i for i, t in enumerate(kept) if seq[t] == 1]
                where = {t: i for i, t in enumerate(kept)}
                log_p = span_log_probability(output.start_logits[r], output.end_logits[r], passage,
                                             where[start_tok], where[end_tok])
                values.append(log_p.exp())
            return torch.stack(values)[:, None]

        return OcclusionTarget(probability, frozenset(range(start_tok, end_tok + 1)))

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
    """Top spans inside the passage, scored by their probability among all valid spans (`valid_span_scores`)."""
    passage = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not passage:
        return []
    scores, valid = valid_span_scores(start_logits, end_logits, passage)
    log_z = torch.logsumexp(scores[valid], dim=0)
    k = min(20, len(passage))
    index = torch.tensor(passage)
    spans = []
    for si in torch.topk(start_logits.float()[index], k).indices.tolist():
        for ei in torch.topk(end_logits.float()[index], k).indices.tolist():
            if valid[si, ei]:
                spans.append((float(scores[si, ei] - log_z), passage[si], passage[ei]))
    spans.sort(reverse=True)
    out = []
    for logp, s, e in spans[:n_best]:
        start, end = offsets[s][0], offsets[e][1]
        out.append({"text": context[start:end], "start": start, "end": end, "score": float(torch.exp(torch.tensor(logp)))})
    return out


def valid_span_scores(start_logits: torch.Tensor, end_logits: torch.Tensor,
                      passage: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """start + end logits of every (start, end) pair of passage tokens, and which pairs are valid spans."""
    index = torch.tensor(passage, dtype=torch.long)
    scores = start_logits.float()[index][:, None] + end_logits.float()[index][None, :]
    n = len(passage)
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # end - start, in passage tokens
    return scores, (offset >= 0) & (offset < MAX_ANSWER_TOKENS)


def span_log_probability(start_logits: torch.Tensor, end_logits: torch.Tensor, passage: list[int],
                         start: int, end: int) -> torch.Tensor:
    """log p(span start..end) among the valid spans of the passage (positions are token indices)."""
    scores, valid = valid_span_scores(start_logits, end_logits, passage)
    i, j = passage.index(start), passage.index(end)
    return scores[i, j] - torch.logsumexp(scores[valid], dim=0)


def char_span_to_tokens(offsets: list[list[int]], seq_ids: list[int | None], start: int, end: int) -> tuple[int, int]:
    """Token indices in the passage (segment 1) covering characters [start, end)."""
    passage = [i for i, s in enumerate(seq_ids) if s == 1] or [0]
    first = next((i for i in passage if offsets[i][1] > start), passage[-1])
    last = next((i for i in reversed(passage) if offsets[i][0] < end), first)
    return first, max(first, last)
