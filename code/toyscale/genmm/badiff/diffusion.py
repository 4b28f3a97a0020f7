"""The diffusion model: the noise schedule, the denoiser with time and quality embeddings, sampling."""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor, nn

from .codec import (
    PIXELS,
)

# ---------------------------------------------------------------------------------------------
# The diffusion model
# ---------------------------------------------------------------------------------------------


def cosine_schedule(steps: int, offset: float = 0.008) -> Tensor:
    """ᾱ_t for t = 1..T (index t − 1): ᾱ_t = f(t)/f(0), f(t) = cos²((t/T + s)/(1 + s) · π/2)."""
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be an int >= 2, got {steps!r}")
    grid = torch.arange(steps + 1, dtype=torch.float64) / steps
    f = torch.cos((grid + offset) / (1 + offset) * math.pi / 2) ** 2
    return (f[1:] / f[0]).clamp(1e-5, 0.9999).float()


def sinusoidal_embedding(values: Tensor, dim: int, scale: float = 1.0) -> Tensor:
    """[sin(v·ω_k), cos(v·ω_k)] with ω_k = scale · 10000^(−k/(dim/2)): the transformer's position code."""
    if dim < 2 or dim % 2:
        raise ValueError(f"dim must be an even int >= 2, got {dim}")
    half = dim // 2
    omega = scale * torch.exp(-math.log(10000.0) * torch.arange(half, device=values.device) / half)
    angle = values.float()[:, None] * omega[None, :]
    return torch.cat([angle.sin(), angle.cos()], dim=1)


class QualityEmbedding(nn.Module):
    """BADiff's quality embedding: an MLP from the target bits per pixel to the model width."""

    def __init__(self, width: int, dim: int = 16) -> None:
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, width))

    def forward(self, target_bpp: Tensor) -> Tensor:
        # e_q = MLP(sinusoid(R))
        return self.mlp(sinusoidal_embedding(target_bpp, self.dim, scale=4.0))


class Denoiser(nn.Module):
    """An MLP denoiser that predicts x̂₀ from (x_t, t) and, for BADiff, the target rate R.

    h₀ = W_in x_t;  e = MLP_t(sinusoid(t)) [+ QualityEmbedding(R)];
    h_{k+1} = h_k + MLP_k(LayerNorm(h_k) + e)  (the embedding is added in every block);
    x̂₀ = W_out LayerNorm(h_K).
    """

    def __init__(self, width: int, blocks: int, steps: int, conditioned: bool) -> None:
        super().__init__()
        self.steps, self.conditioned = steps, conditioned
        self.input = nn.Linear(PIXELS, width)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width)) for _ in range(blocks)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.output = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, PIXELS))
        self.width = width
        # built last, so that a conditioned and a plain model from the same seed share every other weight
        self.quality = QualityEmbedding(width) if conditioned else None

    def embedding(self, t: Tensor, target_bpp: Tensor | None) -> Tensor:
        """e = MLP_t(sinusoid(t)) + QualityEmbedding(R) for conditioned models."""
        # the timestep MLP runs on the T distinct steps once and is looked up per sample
        table = self.time(sinusoidal_embedding(torch.arange(self.steps, device=t.device), self.width))
        e = table[t]
        if self.conditioned:
            if target_bpp is None:
                raise ValueError("a conditioned denoiser needs target_bpp")
            e = e + self.quality(target_bpp)
        return e

    def forward(self, x_t: Tensor, t: Tensor, target_bpp: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(x̂₀ in the model's [−1, 1] space, the last block's features) for a batch."""
        e = self.embedding(t, target_bpp)
        h = self.input(x_t)
        for norm, block in zip(self.norms, self.blocks, strict=True):
            # h ← h + MLP(LayerNorm(h) + e)
            h = h + block(norm(h) + e)
        return self.output(h), h


def attach_quality(model: Denoiser, seed: int = 0) -> Denoiser:
    """A conditioned copy of an unconditioned denoiser, fine-tuning's starting point (BADiff's minimal change).

    The copy gets a quality embedding whose output layer is zero, so e = MLP_t(sin(t)) + 0 and the
    copy computes exactly the original's x̂₀ for every R until training moves it. Its hidden layer
    is drawn from `seed` alone, so every conditioned copy of a run starts alike, whatever came before.
    """
    if model.conditioned:
        raise ValueError("model is already conditioned on the target rate")
    conditioned = copy.deepcopy(model)
    conditioned.conditioned = True
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        quality = QualityEmbedding(model.width)
    nn.init.zeros_(quality.mlp[-1].weight)
    nn.init.zeros_(quality.mlp[-1].bias)
    conditioned.quality = quality.to(next(model.parameters()).device)
    return conditioned


def q_sample(x0: Tensor, t: Tensor, noise: Tensor, alpha_bar: Tensor) -> Tensor:
    """The forward process: x_t = √ᾱ_t x₀ + √(1 − ᾱ_t) ε."""
    a = alpha_bar[t][:, None]
    return a.sqrt() * x0 + (1 - a).sqrt() * noise


def reverse_step(x_t: Tensor, x0_hat: Tensor, t: int, alpha_bar: Tensor, noise: Tensor, eta: float) -> Tensor:
    """One reverse step from x_t to x_{t−1} given the predicted x̂₀ (DDIM's family, Song et al. 2021).

    ε̂ = (x_t − √ᾱ_t x̂₀)/√(1 − ᾱ_t),  σ_t = η √((1 − ᾱ_{t−1})/(1 − ᾱ_t)) √(1 − ᾱ_t/ᾱ_{t−1}),
    x_{t−1} = √ᾱ_{t−1} x̂₀ + √(1 − ᾱ_{t−1} − σ_t²) ε̂ + σ_t z.
    η = 1 is DDPM's ancestral step, η = 0 the deterministic DDIM step. At t = 0 it returns x̂₀.
    """
    if t == 0:
        return x0_hat
    a, a_prev = alpha_bar[t], alpha_bar[t - 1]
    eps_hat = (x_t - a.sqrt() * x0_hat) / (1 - a).sqrt()
    sigma = eta * ((1 - a_prev) / (1 - a)).sqrt() * (1 - a / a_prev).sqrt()
    # x_{t−1} = √ᾱ_{t−1} x̂₀ + √(1 − ᾱ_{t−1} − σ²) ε̂ + σ z
    return a_prev.sqrt() * x0_hat + (1 - a_prev - sigma**2).clamp_min(0).sqrt() * eps_hat + sigma * noise


def to_model_space(x: Tensor) -> Tensor:
    """Intensities [0, 1] → the model's [−1, 1]."""
    return 2 * x - 1


def to_image_space(x: Tensor) -> Tensor:
    """The model's [−1, 1] → intensities [0, 1] (clipped)."""
    return ((x + 1) / 2).clamp(0, 1)
