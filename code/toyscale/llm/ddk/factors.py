"""DDK's building blocks: the domain discrepancy factor (Eq. 1), factor smoothing (Eq. 2), the domain
sampler that follows r, and the distillation loss CE + γ·KL."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor


def _as_positive_vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or len(array) == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence (one value per domain), got shape {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must hold positive finite numbers, got {array.tolist()}")
    return array


def domain_factors(student_ppl: Sequence[float], teacher_ppl: Sequence[float]) -> np.ndarray:
    """The domain discrepancy factor (Eq. 1): r[i] = softmax_i(ℓ_S[i] / ℓ_T[i]).

    ℓ_S, ℓ_T: the student's and the teacher's perplexity on each domain's validation set.
    """
    s = _as_positive_vector(student_ppl, "student_ppl")
    t = _as_positive_vector(teacher_ppl, "teacher_ppl")
    if s.shape != t.shape:
        raise ValueError(f"student_ppl and teacher_ppl need one value per domain, got {len(s)} and {len(t)}")
    ratio = s / t
    # softmax, shifted by the max for stability
    e = np.exp(ratio - ratio.max())
    return e / e.sum()


def smooth_factors(
    r: Sequence[float], student_ppl: Sequence[float], teacher_ppl: Sequence[float], alpha: float = 0.5
) -> np.ndarray:
    """Factor smoothing (Eq. 2): ψ[i] = r[i] · exp(ℓ_S[i]/ℓ_T[i]); r ← α · ψ/Σψ + (1 − α)/N.

    The result stays within [(1 − α)/N, α + (1 − α)/N] whatever the perplexities.
    """
    previous = _as_positive_vector(r, "r")
    if abs(previous.sum() - 1) > 1e-6:
        raise ValueError(f"r must sum to 1 (a distribution over domains), got sum {previous.sum():.6f}")
    if not isinstance(alpha, int | float) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
    s = _as_positive_vector(student_ppl, "student_ppl")
    t = _as_positive_vector(teacher_ppl, "teacher_ppl")
    if not previous.shape == s.shape == t.shape:
        raise ValueError(
            f"r, student_ppl and teacher_ppl need one value per domain, got {len(previous)}, {len(s)}, {len(t)}"
        )
    ratio = s / t
    # ψ[i] = r[i] · exp(ratio[i]), computed as exp(log r + ratio − max) for stability
    log_psi = np.log(previous) + ratio
    psi = np.exp(log_psi - log_psi.max())
    # r ← α · ψ / Σψ + (1 − α) / N
    return alpha * psi / psi.sum() + (1 - alpha) / len(previous)


def sample_domains(r: Tensor | np.ndarray, n: int, generator: torch.Generator) -> Tensor:
    """The domain sampler: `n` domain indices drawn independently with probabilities r."""
    weights = torch.as_tensor(np.asarray(r, dtype=np.float64) if not isinstance(r, Tensor) else r)
    if weights.dim() != 1 or bool((weights < 0).any()) or not math.isclose(float(weights.sum()), 1.0, abs_tol=1e-6):
        raise ValueError(f"r must be a 1-D distribution over domains, got {weights.tolist()}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    return torch.multinomial(weights.double(), n, replacement=True, generator=generator)


def distillation_loss(student_logits: Tensor, targets: Tensor, teacher_log_probs: Tensor, gamma: float) -> Tensor:
    """The DDK/KD loss: CE(student, targets) + γ · KL(p_T ‖ p_S), both averaged over positions.

    KL(p_T ‖ p_S) = Σ_c p_T(c) (log p_T(c) − log p_S(c)) at each position; γ = 0 gives plain
    cross-entropy (the CPT arm).
    """
    if student_logits.shape != teacher_log_probs.shape:
        raise ValueError(
            f"student_logits and teacher_log_probs must have the same shape, got {tuple(student_logits.shape)} "
            f"and {tuple(teacher_log_probs.shape)}"
        )
    if targets.shape != student_logits.shape[:-1]:
        raise ValueError(f"targets must have shape {tuple(student_logits.shape[:-1])}, got {tuple(targets.shape)}")
    if not gamma >= 0:
        raise ValueError(f"gamma must be >= 0, got {gamma!r}")
    log_p_s = F.log_softmax(student_logits.float(), dim=-1)
    ce = F.nll_loss(log_p_s.reshape(-1, log_p_s.shape[-1]), targets.reshape(-1))
    if gamma == 0:
        return ce
    # KL(p_T ‖ p_S) = Σ_c p_T (log p_T − log p_S), mean over positions
    kl = (teacher_log_probs.exp() * (teacher_log_probs - log_p_s)).sum(-1).mean()
    return ce + gamma * kl
