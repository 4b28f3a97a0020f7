"""The language model the chapter quantizes: a TinyLM trained on prose, its weights committed.

Training the default model takes a minute or more per seed on a laptop CPU, so the weights of
the default training (`LMTraining()`) for seeds `REFERENCE_SEEDS` are committed as a checked
data file, `data/llm/glvq_tinylm.npz` (data card `glvq_tinylm` in data/README.md), written by
`reference_arrays` through `core.save_arrays`. `trained_model` loads and verifies them when the
training settings and the seed match and the training text is the one they were trained on;
otherwise it trains, exactly as `reference_arrays` does. The weights are stored in fp16 (the
paper's reference precision), and a freshly trained model is rounded to fp16 too, so both paths
give the same model.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from toyscale.core.data import DataError
from toyscale.datasets import ARTIFACTS
from toyscale.llm.corpus import build_corpus
from toyscale.llm.tinylm import TinyLM, TinyLMConfig, from_state_arrays, state_arrays, train_lm

REFERENCE_SEEDS = (0, 1, 2, 3, 4)  # seeds whose default-trained model is committed
ARTIFACT = "glvq_tinylm"  # the data card / `python -m toyscale data --rebuild` name


@dataclass(frozen=True)
class LMTraining:
    """How the language model is trained (Adam at a constant rate on random windows of prose)."""

    lm: TinyLMConfig = field(default_factory=TinyLMConfig)  # the character transformer (2 blocks, width 64)
    steps: int = 1500  # Adam steps
    batch_size: int = 32  # windows per batch
    lr: float = 3e-3  # learning rate (constant)

    def __post_init__(self) -> None:
        if not isinstance(self.lm, TinyLMConfig):
            raise TypeError(f"lm must be a TinyLMConfig, got {type(self.lm).__name__}")
        for name in ("steps", "batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")

    def key(self) -> str:
        """The settings as canonical JSON (stored with the committed weights)."""
        return json.dumps(asdict(self), sort_keys=True)


def _text_digest(train_ids: np.ndarray) -> np.ndarray:
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(train_ids).tobytes()).digest(), dtype=np.uint8)


def train_model(training: LMTraining, train_ids: np.ndarray, seed: int) -> tuple[TinyLM, list[float]]:
    """Train a TinyLM on `train_ids` and round its weights to fp16; returns (model, loss history)."""
    model, history = train_lm(
        training.lm, train_ids, steps=training.steps, batch_size=training.batch_size, lr=training.lr, seed=seed
    )
    half = {name: a.astype(np.float16).astype(np.float32) for name, a in state_arrays(model).items()}
    return from_state_arrays(training.lm, half), history


def reference_arrays(seeds: tuple[int, ...] = REFERENCE_SEEDS) -> dict[str, np.ndarray]:
    """The committed file's arrays: the default-trained model for every seed, trained here.

    Per seed s: `s<s>/<parameter>` (fp16 weights), `s<s>/history` (training loss, float32) and
    `s<s>/text_sha256` (the SHA-256 of the training text); `training` holds `LMTraining().key()`.
    """
    training = LMTraining()
    out: dict[str, np.ndarray] = {"training": np.frombuffer(training.key().encode(), dtype=np.uint8)}
    for seed in seeds:
        train_ids = build_corpus(["prose"], seed=seed)["prose"].train
        model, history = train_model(training, train_ids, seed)
        for name, a in state_arrays(model).items():
            out[f"s{seed}/{name}"] = a.astype(np.float16)
        out[f"s{seed}/history"] = np.asarray(history, dtype=np.float32)
        out[f"s{seed}/text_sha256"] = _text_digest(train_ids)
    return out


_loaded: dict[str, dict[str, np.ndarray]] = {}


def _committed() -> dict[str, np.ndarray]:
    """The committed arrays, loaded and checksum-verified once per process."""
    if ARTIFACT not in _loaded:
        _loaded[ARTIFACT] = ARTIFACTS[ARTIFACT].load()
    return _loaded[ARTIFACT]


def trained_model(training: LMTraining, train_ids: np.ndarray, seed: int) -> tuple[TinyLM, list[float], bool]:
    """The model trained on `train_ids` with `training` and `seed`: (model, loss history, loaded).

    Loaded from the committed file when it holds this exact training (settings, seed, and the
    SHA-256 of the training text); trained otherwise (a warning says why, when the file should
    have held it).
    """
    if training != LMTraining() or seed not in REFERENCE_SEEDS:
        return (*train_model(training, train_ids, seed), False)
    try:
        arrays = _committed()
    except DataError as error:
        warnings.warn(f"training the model instead of loading it: {error}", stacklevel=2)
        return (*train_model(training, train_ids, seed), False)
    stored_key = bytes(arrays["training"]).decode()
    prefix = f"s{seed}/"
    if stored_key != training.key() or not np.array_equal(arrays.get(prefix + "text_sha256"), _text_digest(train_ids)):
        warnings.warn(
            f"{ARTIFACTS[ARTIFACT].path} was made from other settings or text (another Python version?); "
            f"training instead. Rebuild it with: {ARTIFACTS[ARTIFACT].rebuild_command}",
            stacklevel=2,
        )
        return (*train_model(training, train_ids, seed), False)
    weights = {k[len(prefix) :]: v.astype(np.float32) for k, v in arrays.items() if k.startswith(prefix)}
    history = weights.pop("history").tolist()
    weights.pop("text_sha256")
    return from_state_arrays(training.lm, weights), history, True
