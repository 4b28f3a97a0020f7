"""The language model the chapter quantizes: a TinyLM trained on prose, its weights committed.

Training the default model takes one to two minutes per seed on a CPU core, so the weights of
the default training (`LMTraining()`) for seeds `REFERENCE_SEEDS` are committed as a checked
data file, `data/llm/glvq_tinylm.npz` (data card `glvq_tinylm` in data/README.md), written by
`reference_arrays` through `core.save_arrays`. `trained_model` loads and verifies them when its
*load key* matches: the training settings, the fingerprint of the code that trains the model
(`code_fingerprint`), the seed, and the SHA-256 of the training text. Otherwise it trains, exactly
as `reference_arrays` does, and keeps the result in `data/cache/glvq_tinylm/` (not committed;
the same key names the file), so calibration seeds and falsifier reruns train each model once.
The weights are stored in fp16 (the paper's reference precision), and a freshly trained model is
rounded to fp16 too, so every path gives the same model.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from toyscale.core.data import DataError, load_arrays, save_arrays
from toyscale.core.seeding import seed_everything
from toyscale.core.train import train as train_loop
from toyscale.datasets import ARTIFACTS, ROOT
from toyscale.llm import tinylm
from toyscale.llm.corpus import build_corpus
from toyscale.llm.tinylm import TinyLM, TinyLMConfig, from_state_arrays, state_arrays, train_lm

REFERENCE_SEEDS = (0, 1, 2, 3, 4)  # seeds whose default-trained model is committed
ARTIFACT = "glvq_tinylm"  # the data card / `python -m toyscale data --rebuild` name
CACHE = ROOT / "data" / "cache" / "glvq_tinylm"  # models trained for other seeds or settings (not committed)


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


# The code that decides the trained weights: the model, its initialization, the sampler, the loss,
# the training loop, the seeding and the fp16 rounding. A change to any of them changes the fingerprint.
_TRAINING_CODE = (
    tinylm.TinyLMConfig,
    tinylm.CausalSelfAttention,
    tinylm.MLP,
    tinylm.Block,
    tinylm.TinyLM,
    tinylm._as_tokens,
    tinylm.sample_windows,
    tinylm.lm_loss,
    tinylm.train_lm,
    tinylm.state_arrays,
    tinylm.from_state_arrays,
    train_loop,
    seed_everything,
    train_model,
)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def code_fingerprint() -> str:
    """SHA-256 of the syntax trees of the code that trains the model (`_TRAINING_CODE`).

    Comments, docstrings and formatting do not enter it; any change to what the code does does.
    """
    digest = hashlib.sha256()
    for obj in _TRAINING_CODE:
        tree = _without_docstrings(ast.parse(textwrap.dedent(inspect.getsource(obj))))
        digest.update(f"{obj.__module__}.{obj.__qualname__}:{ast.dump(tree)}\n".encode())
    return digest.hexdigest()


def _as_text(value: str) -> np.ndarray:
    return np.frombuffer(value.encode(), dtype=np.uint8)


def reference_arrays(seeds: tuple[int, ...] = REFERENCE_SEEDS) -> dict[str, np.ndarray]:
    """The committed file's arrays: the default-trained model for every seed, trained here.

    Per seed s: `s<s>/<parameter>` (fp16 weights), `s<s>/history` (training loss, float32) and
    `s<s>/text_sha256` (the SHA-256 of the training text); `training` holds `LMTraining().key()`
    and `code` the `code_fingerprint()` of the code that trained them.
    """
    training = LMTraining()
    out: dict[str, np.ndarray] = {"training": _as_text(training.key()), "code": _as_text(code_fingerprint())}
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


def _unpack(arrays: dict[str, np.ndarray], prefix: str, lm: TinyLMConfig) -> tuple[TinyLM, list[float]]:
    weights = {k[len(prefix) :]: v.astype(np.float32) for k, v in arrays.items() if k.startswith(prefix)}
    history = weights.pop("history").tolist()
    weights.pop("text_sha256")
    return from_state_arrays(lm, weights), history


def cache_path(training: LMTraining, train_ids: np.ndarray, seed: int) -> Path:
    """Where a model trained with these settings, code, text and seed is kept: named by their digest."""
    key = f"{training.key()}|{code_fingerprint()}|{bytes(_text_digest(train_ids)).hex()}|{seed}"
    return CACHE / f"s{seed}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz"


def _trained_and_cached(training: LMTraining, train_ids: np.ndarray, seed: int) -> tuple[TinyLM, list[float]]:
    """The model from the cache when it holds this key; otherwise trained and written there."""
    path = cache_path(training, train_ids, seed)
    if path.is_file():
        try:
            return _unpack(load_arrays(path), "m/", training.lm)
        except DataError:
            path.unlink(missing_ok=True)  # a corrupt cache entry: train again
    model, history = train_model(training, train_ids, seed)
    arrays = {f"m/{name}": a.astype(np.float16) for name, a in state_arrays(model).items()}
    arrays["m/history"] = np.asarray(history, dtype=np.float32)
    arrays["m/text_sha256"] = _text_digest(train_ids)
    save_arrays(path, arrays)
    return model, history


def trained_model(training: LMTraining, train_ids: np.ndarray, seed: int) -> tuple[TinyLM, list[float], bool]:
    """The model trained on `train_ids` with `training` and `seed`: (model, loss history, loaded).

    Loaded from the committed file when its load key matches (settings, code fingerprint, seed and
    the SHA-256 of the training text); otherwise trained (or read from the local cache), with a
    warning when the committed file should have held it. `loaded` is True for the committed file only.
    """
    if training != LMTraining() or seed not in REFERENCE_SEEDS:
        return (*_trained_and_cached(training, train_ids, seed), False)
    try:
        arrays = _committed()
    except DataError as error:
        warnings.warn(f"training the model instead of loading it: {error}", stacklevel=2)
        return (*_trained_and_cached(training, train_ids, seed), False)
    prefix = f"s{seed}/"
    stale = [
        what
        for what, same in (
            ("training settings", bytes(arrays["training"]).decode() == training.key()),
            ("training code", "code" in arrays and bytes(arrays["code"]).decode() == code_fingerprint()),
            ("training text", np.array_equal(arrays.get(prefix + "text_sha256"), _text_digest(train_ids))),
        )
        if not same
    ]
    if stale:
        warnings.warn(
            f"{ARTIFACTS[ARTIFACT].path} was made with other {', '.join(stale)} (a code change, or another "
            f"Python version?); training instead. Rebuild it with: {ARTIFACTS[ARTIFACT].rebuild_command}",
            stacklevel=2,
        )
        return (*_trained_and_cached(training, train_ids, seed), False)
    return (*_unpack(arrays, prefix, training.lm), True)
