"""JRC's model and losses: two logits, the calibration and within-context ranking terms, the baselines' losses."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

DENOMINATORS = ("all", "other")


class CTRModel(nn.Module):
    """A small CTR model: one embedding per categorical field, the user×item product, an MLP.

    h = [e_user, e_item, e_seg, e_cat, e_user ⊙ e_item];  logits = MLP(h) ∈ R^{n_logits}.
    JRC uses n_logits = 2 (f₀, f₁); the pointwise and combined baselines use one logit s.
    """

    def __init__(self, cardinality: dict[str, int], *, embedding_dim: int, hidden: int, n_logits: int) -> None:
        super().__init__()
        if n_logits not in (1, 2):
            raise ValueError(f"n_logits must be 1 or 2, got {n_logits}")
        if "user" not in cardinality or "item" not in cardinality:
            raise ValueError(f"cardinality must name 'user' and 'item' fields, got {sorted(cardinality)}")
        self.field_names = list(cardinality)
        self.embeddings = nn.ModuleList(nn.Embedding(n, embedding_dim) for n in cardinality.values())
        for table in self.embeddings:
            nn.init.normal_(table.weight, std=0.05)
        width = (len(self.field_names) + 1) * embedding_dim
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, n_logits))

    def forward(self, X: Tensor) -> Tensor:
        """Logits of shape (N, n_logits) for the field codes X of shape (N, n_fields)."""
        embedded = [table(X[:, j]) for j, table in enumerate(self.embeddings)]
        user, item = embedded[self.field_names.index("user")], embedded[self.field_names.index("item")]
        # h = [e_1, ..., e_F, e_user ⊙ e_item]
        h = torch.cat([*embedded, user * item], dim=1)
        return self.mlp(h)


def p_click(logits: Tensor) -> Tensor:
    """The click probability: σ(f₁ − f₀) for two logits (= softmax(f)₁), σ(s) for one."""
    if logits.dim() == 2 and logits.shape[1] == 2:
        # p(click | x) = softmax(f)_1 = σ(f₁ − f₀)
        return torch.sigmoid(logits[:, 1] - logits[:, 0])
    return torch.sigmoid(logits.reshape(-1))


# ---------------------------------------------------------------------------------------------
# The losses
# ---------------------------------------------------------------------------------------------


def _check_inputs(logits: Tensor, y: Tensor, context: Tensor | None, n_logits: int) -> None:
    """Raise ValueError naming the argument when shapes or labels do not fit."""
    want = (y.shape[0], 2) if n_logits == 2 else (y.shape[0],)
    if y.dim() != 1:
        raise ValueError(f"y must be 1-D (one label per sample), got shape {tuple(y.shape)}")
    if tuple(logits.shape) != want:
        raise ValueError(f"logits must have shape {want} for {y.shape[0]} labels, got {tuple(logits.shape)}")
    if y.numel() and not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold only 0/1 labels")
    if context is not None and tuple(context.shape) != tuple(y.shape):
        raise ValueError(f"context must have one id per sample, shape {tuple(y.shape)}, got {tuple(context.shape)}")


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] (the weight of the calibration term), got {alpha}")


def context_logsumexp(scores: Tensor, context: Tensor, mask: Tensor | None = None) -> Tensor:
    """Per sample x, log Σ_{x' ∈ X_z(x), mask(x')} exp scores(x'): a log-sum-exp within x's context.

    Contexts are any integer ids; samples left out by `mask` do not compete. A context with no
    competitor gives log(1e-30) ≈ −69, which adds nothing to a log-sum with a real term.
    """
    _, local = torch.unique(context, return_inverse=True)
    n_contexts = int(local.max()) + 1 if local.numel() else 0
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    # m_z = max over the context, detached, so that exp never overflows
    m = torch.full((n_contexts,), float("-inf"), dtype=scores.dtype, device=scores.device).scatter_reduce(
        0, local, scores.detach(), reduce="amax", include_self=True
    )
    m = torch.nan_to_num(m, neginf=0.0)
    # Σ_{x'∈z} exp(s(x') − m_z)
    sums = torch.zeros(n_contexts, dtype=scores.dtype, device=scores.device).index_add(
        0, local, torch.exp(scores - m[local])
    )
    # log Σ exp s = m_z + log Σ exp(s − m_z)
    return (torch.log(sums.clamp_min(1e-30)) + m)[local]


def calibration_loss(logits: Tensor, y: Tensor) -> Tensor:
    """JRC's calibration term: the mean cross-entropy −log softmax(f(x))_{y(x)}."""
    _check_inputs(logits, y, None, n_logits=2)
    return F.cross_entropy(logits, y)


def ranking_loss(logits: Tensor, y: Tensor, context: Tensor, denominator: str = "all") -> Tensor:
    """JRC's ranking term, averaged over samples: −log[exp f_y(x) / Σ_{x'} exp f_y(x')], y = y(x).

    denominator='all': x' runs over every sample of x's context X_z (the paper's equation).
    denominator='other': x' runs over x itself and the samples of X_z whose label differs from
    y(x) (a variant found in a public implementation).
    """
    _check_inputs(logits, y, context, n_logits=2)
    if denominator not in DENOMINATORS:
        raise ValueError(f"denominator must be one of {DENOMINATORS}, got {denominator!r}")
    own = logits.gather(1, y.long()[:, None]).squeeze(1)  # f_{y(x)}(x)
    log_denominator = torch.empty_like(own)
    for label in (0, 1):
        # for samples with y(x) = label, the channel f_label competes within the context
        is_label = y == label
        if denominator == "all":
            lse = context_logsumexp(logits[:, label], context)
        else:
            # log[ exp f_label(x) + Σ_{x' ∈ z, y(x') ≠ label} exp f_label(x') ]
            lse = torch.logaddexp(logits[:, label], context_logsumexp(logits[:, label], context, mask=~is_label))
        log_denominator = torch.where(is_label, lse, log_denominator)
    return (log_denominator - own).mean()


def jrc_loss(logits: Tensor, y: Tensor, context: Tensor, alpha: float, denominator: str = "all") -> Tensor:
    """The JRC objective: L = α · L_calib + (1 − α) · L_rank (both averaged over the batch)."""
    _check_alpha(alpha)
    # L = α · L_calib + (1 − α) · L_rank
    return alpha * calibration_loss(logits, y) + (1 - alpha) * ranking_loss(logits, y, context, denominator)


def pointwise_loss(logit: Tensor, y: Tensor) -> Tensor:
    """The baseline: the mean log loss −[y log σ(s) + (1 − y) log(1 − σ(s))] on one logit s."""
    _check_inputs(logit, y, None, n_logits=1)
    return F.binary_cross_entropy_with_logits(logit, y.float())


def listwise_loss(logit: Tensor, y: Tensor, context: Tensor) -> Tensor:
    """The within-context softmax on one logit: −(1/N) Σ_{x: y=1} log[exp s(x) / Σ_{x'∈X_z} exp s(x')].

    It is JRC's L_rank with f = [0, s] less a constant: with one logit only clicks can compete.
    """
    _check_inputs(logit, y, context, n_logits=1)
    log_softmax = logit - context_logsumexp(logit, context)
    return -(log_softmax * y.float()).sum() / y.numel()


def combined_loss(logit: Tensor, y: Tensor, context: Tensor, alpha: float) -> Tensor:
    """The naive combination on one logit: L = α · log loss + (1 − α) · listwise ranking loss."""
    _check_alpha(alpha)
    return alpha * pointwise_loss(logit, y) + (1 - alpha) * listwise_loss(logit, y, context)
