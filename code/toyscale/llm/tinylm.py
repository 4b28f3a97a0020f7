"""A tiny character-level transformer language model, trainable on a CPU in seconds.

The model is a GPT in miniature: token and position embeddings, `n_layer` pre-norm blocks of
causal self-attention and a GELU MLP, a final layer norm and an output head over the 96-symbol
alphabet of `toyscale.llm.corpus`. Every weight matrix that multiplies activations is an
`nn.Linear` without bias (per block: `attn.qkv`, `attn.proj`, `mlp.fc1`, `mlp.fc2`; then
`head`), so a quantization chapter can find and replace them by name.

- `TinyLMConfig`: the size knobs (width, depth, heads, context); `n_params` counts the weights.
- `train_lm(config, tokens, steps=..., seed=...)`: Adam on random windows of a token array, through
  the book's shared loop `core.train`, at a constant learning rate (so a checkpoint after k steps
  is the model a k-step run would give, as scaling-law fits want).
- `bits_per_char(model, tokens)`: the held-out cross-entropy in bits per character, over
  non-overlapping windows of the model's context.
- `sample_windows`: the batch sampler (inputs and next-character targets), for chapters that write
  their own loss (distillation, mixtures of domains).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from toyscale.core.devices import device
from toyscale.core.seeding import seed_everything
from toyscale.core.train import train
from toyscale.llm.corpus import VOCAB_SIZE


@dataclass(frozen=True)
class TinyLMConfig:
    """The size of a TinyLM."""

    vocab_size: int = VOCAB_SIZE  # symbols in the alphabet
    context: int = 64  # characters the model sees (and the window length in training)
    d_model: int = 64  # width of the residual stream
    n_layer: int = 2  # transformer blocks
    n_head: int = 4  # attention heads per block (d_model must be a multiple)
    mlp_ratio: int = 4  # the MLP's hidden width is mlp_ratio · d_model

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context", "d_model", "n_layer", "n_head", "mlp_ratio"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_head ({self.n_head})")

    @property
    def n_params(self) -> int:
        """Parameters in the Linear layers (the non-embedding count scaling laws use as N)."""
        d, h = self.d_model, self.mlp_ratio * self.d_model
        per_block = 3 * d * d + d * d + d * h + h * d
        return self.n_layer * per_block + d * self.vocab_size


class CausalSelfAttention(nn.Module):
    """Multi-head attention where position t sees positions ≤ t: softmax(QKᵀ/√d_h + mask) V."""

    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        self.proj = nn.Linear(config.d_model, config.d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    """fc2(GELU(fc1(x)))."""

    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.mlp_ratio * config.d_model, bias=False)
        self.fc2 = nn.Linear(config.mlp_ratio * config.d_model, config.d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    """x + attn(LN(x)), then x + mlp(LN(x))."""

    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """A character-level GPT: logits (B, T, vocab) for ids (B, T), T ≤ context."""

    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        if not isinstance(config, TinyLMConfig):
            raise TypeError(f"config must be a TinyLMConfig, got {type(config).__name__}")
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.d_model)
        self.pos = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            # residual projections scaled down with depth, as in GPT-2
            nn.init.normal_(block.attn.proj.weight, std=0.02 / math.sqrt(2 * config.n_layer))
            nn.init.normal_(block.mlp.fc2.weight, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, ids: Tensor) -> Tensor:
        n_positions = ids.shape[1]
        if n_positions > self.config.context:
            raise ValueError(f"ids hold {n_positions} positions but the model's context is {self.config.context}")
        x = self.tok(ids) + self.pos(torch.arange(n_positions, device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def linear_layers(self) -> dict[str, nn.Linear]:
        """Every Linear layer by its qualified name, in forward order ('blocks.0.attn.qkv', ..., 'head')."""
        return {name: m for name, m in self.named_modules() if isinstance(m, nn.Linear)}


def _as_tokens(tokens: np.ndarray | Tensor, context: int, name: str = "tokens") -> Tensor:
    """tokens as a 1-D long tensor on the default device, long enough for one window."""
    if not isinstance(tokens, np.ndarray | Tensor):
        raise TypeError(f"{name} must be a NumPy array or tensor of ids, got {type(tokens).__name__}")
    t = torch.as_tensor(np.asarray(tokens) if isinstance(tokens, np.ndarray) else tokens).long().reshape(-1)
    if t.numel() < context + 1:
        raise ValueError(f"{name} must hold at least context + 1 = {context + 1} ids, got {t.numel()}")
    return t.to(device())


def sample_windows(tokens: Tensor, batch_size: int, context: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """A batch of random windows: X = tokens[i : i + context], y = tokens[i + 1 : i + context + 1]."""
    starts = torch.randint(0, tokens.numel() - context, (batch_size,), generator=generator)
    index = starts[:, None] + torch.arange(context + 1)[None, :]
    windows = tokens[index.to(tokens.device)]
    return windows[:, :-1], windows[:, 1:]


def lm_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    """Mean next-character cross-entropy (nats) of a batch (X, y)."""
    X, y = batch
    logits = model(X)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def train_lm(
    config: TinyLMConfig,
    tokens: np.ndarray | Tensor,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 100,
) -> tuple[TinyLM, list[float]]:
    """Train a fresh TinyLM with Adam at a constant `lr` on `steps` batches of random windows.

    Returns the model (in eval mode) and the mean training loss (nats) of every `log_every` steps.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if not isinstance(log_every, int) or log_every < 1:
        raise ValueError(f"log_every must be a positive int, got {log_every!r}")
    data = _as_tokens(tokens, config.context)
    seed_everything(seed)
    model = TinyLM(config).to(device())
    generator = torch.Generator().manual_seed(seed)
    n_chunks = math.ceil(steps / log_every)

    def batches(chunk: int):
        for _ in range(min(log_every, steps - chunk * log_every)):
            yield sample_windows(data, batch_size, config.context, generator)

    history = train(model, lm_loss, batches, epochs=n_chunks, lr=lr, desc="TinyLM").losses
    return model, history


@torch.no_grad()
def bits_per_char(model: TinyLM, tokens: np.ndarray | Tensor, *, batch_size: int = 256) -> float:
    """Held-out cross-entropy in bits per character: −(1/n) Σ log₂ p(x_t | x_<t).

    The text is cut into non-overlapping windows of context + 1 ids; in each, every position
    after the first is predicted from the ones before it within the window (the remainder of the
    text after the last whole window is left out).
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    context = model.config.context
    data = _as_tokens(tokens, context)
    n_windows = data.numel() // (context + 1)
    windows = data[: n_windows * (context + 1)].view(n_windows, context + 1)
    was_training = model.training
    model.eval()
    total = 0.0
    for start in range(0, n_windows, batch_size):
        chunk = windows[start : start + batch_size]
        logits = model(chunk[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1), reduction="sum").item()
    model.train(was_training)
    # nats → bits
    return total / (n_windows * context) / math.log(2)


def state_arrays(model: TinyLM) -> dict[str, np.ndarray]:
    """The model's weights as float32 NumPy arrays by parameter name (for `core.save_arrays`)."""
    return {name: t.detach().float().cpu().numpy() for name, t in model.state_dict().items()}


def from_state_arrays(config: TinyLMConfig, arrays: dict[str, np.ndarray]) -> TinyLM:
    """A TinyLM of `config` holding the weights `arrays` (as written by `state_arrays`)."""
    model = TinyLM(config)
    expected = set(model.state_dict())
    if set(arrays) != expected:
        raise ValueError(f"arrays must hold exactly the parameters {sorted(expected)}, got {sorted(arrays)}")
    model.load_state_dict({name: torch.from_numpy(np.asarray(a)) for name, a in arrays.items()})
    return model.to(device()).eval()
