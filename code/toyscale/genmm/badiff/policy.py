"""Sampling trajectories, BADiff's stop labels and stop policy, and the constant stops it must beat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from toyscale.core.seeding import seed_everything
from toyscale.genmm import digits

from .codec import PIXELS, transmit
from .diffusion import Denoiser, cosine_schedule, reverse_step, to_image_space


@dataclass
class Trajectory:
    """One sampling run: the x̂₀ estimate (images in [0, 1]) and the denoiser's features after every step."""

    x0_hat: np.ndarray  # (steps, n, 8, 8): the estimate after 1, 2, …, T evaluations
    features: np.ndarray  # (steps, n, width): the last block's features at each evaluation


@torch.no_grad()
def sample_trajectory(
    model: Denoiser,
    n: int,
    seed: int,
    target_bpp: float | None = None,
    eta: float = 0.0,
    *,
    keep_features: bool = True,
) -> Trajectory:
    """Run all T reverse steps from x_T ~ N(0, I) (drawn from `seed`) and keep every step's x̂₀ and features.

    Arms sampled with the same seed start from the same x_T (common random numbers), so their
    paired differences do not carry the noise of two independent draws. Without `keep_features`
    the features array is empty (n, 0) per step: only a stop policy reads them.
    """
    on = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    alpha_bar = cosine_schedule(model.steps).to(on)
    x = torch.randn((n, PIXELS), generator=generator).to(on)
    target = None if target_bpp is None else torch.full((n,), float(target_bpp), device=on)
    estimates, features = [], []
    for t in range(model.steps - 1, -1, -1):
        x0_hat, h = model(x, torch.full((n,), t, device=on), target)
        x0_hat = x0_hat.clamp(-1, 1)
        estimates.append(to_image_space(x0_hat).reshape(n, digits.SIDE, digits.SIDE).cpu().numpy())
        features.append(h.cpu().numpy() if keep_features else np.zeros((n, 0), dtype=np.float32))
        noise = torch.randn((n, PIXELS), generator=generator).to(on)
        x = reverse_step(x, x0_hat, t, alpha_bar, noise, eta)
    return Trajectory(np.stack(estimates).astype(np.float64), np.stack(features))


def stop_costs(trajectory: Trajectory, target_bpp: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The parts of J(k) that do not depend on γ: (rate excess + β · distortion, k / T), each (steps, n).

    For every image and every k = 1..T evaluations, x̂₀(k) is sent through the link at the target;
    the rate enters as a hinge max(0, rate(k) − R), as in training (a rate below the budget earns
    nothing, since rate control already keeps every image within it), the distortion is the MSE of
    the received x̂₀(k) to the received finished sample.
    """
    steps, n = trajectory.x0_hat.shape[:2]
    flat = trajectory.x0_hat.reshape(steps * n, digits.SIDE, digits.SIDE)
    sent = transmit(flat, target_bpp)
    received = sent.received.reshape(steps, n, -1)
    excess = np.maximum(sent.bpp.reshape(steps, n) - target_bpp, 0.0)
    distortion = ((received - received[-1][None]) ** 2).mean(axis=2)
    k = np.arange(1, steps + 1)[:, None] * np.ones((1, n))
    return excess + beta * distortion, k / steps


def stop_labels_from(costs: tuple[np.ndarray, np.ndarray], gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """(k* per image, label[k, i] = 1 when k ≥ k*) from `stop_costs` and the step weight γ."""
    quality, steps = costs
    # J(k) = max(0, rate − R) + β · distortion + γ · k / T
    best = np.argmin(quality + gamma * steps, axis=0) + 1
    k = np.arange(1, quality.shape[0] + 1)[:, None]
    return best, (k >= best[None, :]).astype(np.float32)


def stop_labels(trajectory: Trajectory, target_bpp: float, beta: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """BADiff's stop labels from full trajectories.

    For every image and every k = 1..T evaluations, score J(k) = max(0, rate(k) − R) + β ·
    MSE(received(k), received(T)) + γ · k/T (`stop_costs`); k* = argmin_k J(k). Returns (k* per
    image, label[k, i] = 1 when k ≥ k*).
    """
    return stop_labels_from(stop_costs(trajectory, target_bpp, beta), gamma)


def gamma_for_compute(costs: tuple[np.ndarray, np.ndarray], mean_evals: float, iterations: int = 40) -> float:
    """The step weight γ whose labels stop the label trajectories after `mean_evals` evaluations on average.

    The mean k* falls as γ rises (a larger price per step never moves an argmin later), so bisection
    on γ finds the weight that sets the compute; it reads only the label trajectories, never test data.
    """
    steps = costs[0].shape[0]
    if not 1 <= mean_evals <= steps:
        raise ValueError(f"mean_evals must lie in [1, {steps}], got {mean_evals}")
    low, high = 0.0, 1.0
    while stop_labels_from(costs, high)[0].mean() > mean_evals and high < 1e6:
        high *= 2
    for _ in range(iterations):
        middle = (low + high) / 2
        if stop_labels_from(costs, middle)[0].mean() > mean_evals:
            low = middle
        else:
            high = middle
    return high


class StopPolicy(nn.Module):
    """The stop policy: p(stop) = σ(MLP([standardised h, k/T, R])).

    h are the denoiser's last-block features (all of them: averaging groups of an MLP's hidden
    units, the paper's pooling of U-Net feature maps, has no meaning here), k/T the share of the T
    evaluations done so far and R the target rate.
    """

    def __init__(self, width: int, hidden: int = 32) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(width + 2, hidden), nn.SiLU(), nn.Linear(hidden, 1))
        self.register_buffer("mean", torch.zeros(width))
        self.register_buffer("scale", torch.ones(width))

    def forward(self, features: torch.Tensor, t_fraction: torch.Tensor, target_bpp: torch.Tensor) -> torch.Tensor:
        """Stop logits for a batch."""
        h = (features - self.mean) / self.scale
        return self.mlp(torch.cat([h, t_fraction[:, None], target_bpp[:, None]], dim=1)).squeeze(1)


def _policy_inputs(trajectory: Trajectory, target_bpp: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    steps, n, width = trajectory.features.shape
    features = torch.as_tensor(trajectory.features.reshape(steps * n, width), dtype=torch.float32)
    # the fraction of the T evaluations done so far
    done = torch.arange(1, steps + 1, dtype=torch.float32).repeat_interleave(n) / steps
    return features, done, torch.full((steps * n,), float(target_bpp))


def train_stop_policy(
    trajectories: Mapping[float, Trajectory], labels: Mapping[float, np.ndarray], width: int, epochs: int, seed: int
) -> StopPolicy:
    """Fit the stop policy to the trajectory labels (full-batch Adam on binary cross-entropy)."""
    seed_everything(seed)
    inputs = [_policy_inputs(trajectories[r], r) for r in trajectories]
    features = torch.cat([i[0] for i in inputs])
    done = torch.cat([i[1] for i in inputs])
    target = torch.cat([i[2] for i in inputs])
    y = torch.cat([torch.as_tensor(labels[r].reshape(-1)) for r in trajectories])
    policy = StopPolicy(width)
    policy.mean.copy_(features.mean(dim=0))
    policy.scale.copy_(features.std(dim=0).clamp_min(1e-3))
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for _ in range(epochs):
        loss = F.binary_cross_entropy_with_logits(policy(features, done, target), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    policy.eval()
    return policy


@torch.no_grad()
def stop_steps(policy: StopPolicy, trajectory: Trajectory, target_bpp: float, threshold: float) -> np.ndarray:
    """Evaluations each image takes: the first k at which p(stop) ≥ threshold (T if never)."""
    features, done, target = _policy_inputs(trajectory, target_bpp)
    steps, n = trajectory.features.shape[:2]
    p = torch.sigmoid(policy(features, done, target)).reshape(steps, n).numpy()
    stop = p >= threshold
    return np.where(stop.any(axis=0), np.argmax(stop, axis=0) + 1, steps)


def constant_stops(mean_evals: float, n: int, steps: int) -> np.ndarray:
    """A per-target constant stop at exactly `mean_evals` evaluations on average: ⌊m⌋ or ⌊m⌋ + 1 per image.

    The first round((m − ⌊m⌋) · n) images (the samples are exchangeable) take the extra step, so
    the mean matches the per-image policy's to within 1/n: every image gets the same compute.
    """
    if not 1 <= mean_evals <= steps:
        raise ValueError(f"mean_evals must lie in [1, {steps}], got {mean_evals}")
    low = int(np.floor(mean_evals))
    k = np.full(n, low)
    k[: round((mean_evals - low) * n)] += 1
    return np.minimum(k, steps)


def at_stops(trajectory: Trajectory, k: np.ndarray) -> np.ndarray:
    """Each image's x̂₀ after its own number of evaluations k_i (1 ≤ k_i ≤ T)."""
    return trajectory.x0_hat[np.asarray(k) - 1, np.arange(trajectory.x0_hat.shape[1])]


@torch.no_grad()
def sample_strided(model: Denoiser, n: int, seed: int, evals: int, target_bpp: float | None = None) -> np.ndarray:
    """A shorter sampler: `evals` deterministic DDIM steps on evenly spaced timesteps from T − 1 to 0.

    From x_t with estimate x̂₀, the η = 0 step jumps to the next timestep s of the grid:
    x_s = √ᾱ_s x̂₀ + √(1 − ᾱ_s) ε̂, ε̂ = (x_t − √ᾱ_t x̂₀)/√(1 − ᾱ_t). The last evaluation, at t = 0,
    gives the finished sample (images (n, 8, 8) in [0, 1]). x_T is drawn from `seed` as in
    `sample_trajectory`, so the two samplers start from the same points.
    """
    if not 1 <= evals <= model.steps:
        raise ValueError(f"evals must lie in [1, {model.steps}], got {evals}")
    on = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    alpha_bar = cosine_schedule(model.steps).to(on)
    x = torch.randn((n, PIXELS), generator=generator).to(on)
    target = None if target_bpp is None else torch.full((n,), float(target_bpp), device=on)
    grid = np.unique(np.rint(np.linspace(model.steps - 1, 0, evals)).astype(int))[::-1]
    x0_hat = x
    for i, t in enumerate(grid):
        x0_hat = model(x, torch.full((n,), int(t), device=on), target)[0].clamp(-1, 1)
        if i + 1 < len(grid):
            a, a_next = alpha_bar[t], alpha_bar[grid[i + 1]]
            eps_hat = (x - a.sqrt() * x0_hat) / (1 - a).sqrt()
            # x_s = √ᾱ_s x̂₀ + √(1 − ᾱ_s) ε̂
            x = a_next.sqrt() * x0_hat + (1 - a_next).sqrt() * eps_hat
    return to_image_space(x0_hat).reshape(n, digits.SIDE, digits.SIDE).cpu().numpy().astype(np.float64)
