"""The model library: heads, training, the ensemble recipe, serving (in process and TorchServe), explanations.

Plain Python on torch and transformers: no Django and no app of the project is imported anywhere in this
package (tests/site/test_import_layers.py), so it runs wherever torch does. The Django app `modelzoo` is the
thin layer around it (model versions and ensembles in the database, services, registration, API, commands);
a TorchServe archive carries this whole package (`zoo.archive`), so TorchServe runs the very code the
in-process backend runs. Importing `zoo` itself loads nothing heavy: torch comes with the modules that use it.

    heads/         one spec per kind of model output (classification, QA) and their registry
    runtime        a model loaded from its artifact folder: `Predictor` (predict, explain)
    trunk          members that share frozen lower layers run them once (`SharedEnsemble`)
    explain        word occlusion over an ensemble, gradient methods on one model
    faithfulness   ERASER comprehensiveness of an explanation
    precision      native bfloat16 and autocast
    encoder        the packaged MiniLM (offline) and the tiny test encoder
    encoders       base encoders as a registry: a name or local folder -> `EncoderSource` (`resolve`)
    families       each encoder family's layers and embeddings: trunk/tail views, whether it splits
    tiny           tiny random checkpoints of every family, made in code (tests)
    device         the device policy (`ZOO_DEVICE`) and mixed precision on a GPU
    offsets        token offsets trimmed to the text's own characters (BPE and SentencePiece)
    trainers       the trainer contract (`TrainJob` in, artifacts out) and its registry
    training       one model: `TrainSpec`, the training loop, artifacts
    recipes        the ensemble recipe (frozen lower layers encoded once, top blocks per member)
    aggregation    how members' predictions become the ensemble's
    data           `LabelledSet`, what training and evaluation receive
    types          the predictions, explanations and verdicts callers receive; `BackendError`
    serving/       the backend contract (`base.Backend`) and its registry (`BACKENDS`): in process, TorchServe
    archive        TorchServe archives (one per ensemble); `torchserve_ctl` starts a local TorchServe
    artifacts      what an uploaded model's config.json and model.safetensors may contain
    progress       a tqdm bar fed by training's progress callback
    flags          the library's `ZOO_*` environment flags, each read by a typed reader
    registry       the one registry helper every registry of the project is (`Registry`: register, lookup, names,
                   one error for an unknown name)
"""

import os

# The model hub is never reached: the encoder ships in a package (`encoder`), models are artifact folders.
HUB_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def stay_offline() -> None:
    """Set the hub's offline variables (a value already in the environment wins). The one place they are set:
    called before transformers is imported (`runtime`, `encoder`) and by the site's settings."""
    for name, value in HUB_OFFLINE.items():
        os.environ.setdefault(name, value)
