"""Token character offsets that point at the text's own characters, whatever the tokenizer family.

WordPiece tokenizers (BERT, DistilBERT, ELECTRA, MPNet) give each token the characters of its piece. Others do
not, quite: a SentencePiece-style tokenizer (XLM-R, ALBERT, DeBERTa-v2/v3) or a byte-level BPE one without
offset trimming (DeBERTa) counts the space a piece starts with ("▁the", "Ġfood" -> " food"), and a lone "▁"
piece is given the character of the next piece (two tokens over one character). Words built from such offsets
run together ("the food was terrible" as one word) and a QA answer starts with a space.

`clean(offsets, seq_ids, texts)` trims the whitespace off each token's span, and empties a token whose span is
all whitespace or lies inside the next token's span (the lone "▁"); an empty span (start == end) is what special
tokens already have, so every reader skips it. Tokenizers that need none of this are found once
(`needs_cleaning`) and left as they are. No torch, no Django (packed into TorchServe archives).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def needs_cleaning(tokenizer: Any) -> bool:
    """Whether the tokenizer's offsets may count whitespace or overlap: all but WordPiece fast tokenizers."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return True
    return type(backend.model).__name__ != "WordPiece"


def clean(offsets: Sequence[Sequence[int]], seq_ids: Sequence[int | None],
          texts: Sequence[str | None]) -> list[list[int]]:
    """The offsets of one tokenized row with whitespace trimmed and overlapping marker pieces emptied."""
    out = [[int(s), int(e)] for s, e in offsets]
    n = len(out)
    for i in range(n):
        seg = seq_ids[i]
        start, end = out[i]
        if seg is None or end <= start:
            continue
        text = texts[seg] or ""
        end = min(end, len(text))
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        nxt = i + 1
        if nxt < n and seq_ids[nxt] == seg and out[nxt][1] > out[nxt][0] and start < end:
            n_start = out[nxt][0]
            if n_start <= start:  # this piece lies within the next one's span (a lone "▁"): nothing of its own
                end = start
            elif n_start < end:  # overlapping: the next piece keeps the shared characters
                end = n_start
        out[i] = [start, end] if end > start else [start, start]
    return out
