"""Rec4Ad's building blocks: one CTR network for every arm, the alignment and decorrelation losses, IPS weights.

The two modules are this book's reconstruction (only the paper's abstract is public): alignment is
moment matching of the shared representation across the two domains (Deep CORAL), decorrelation a
penalty on the cross-correlation of the shared and the domain-specific parts (domain separation
networks).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Rec4AdNet(nn.Module):
    """A CTR model for a mixed feed; one class serves every arm.

    Plain (disentangle=False): h = ReLU(W [x, d]) with d the domain indicator (only when
    use_domain), logit = v·h + b_d. Disentangled (the Rec4Ad arm):

        h_s = ReLU(W_s x)            the shared representation (both domains),
        h_p = ReLU(W_{p,d} x)        the domain-specific representation (one encoder per domain),
        logit = v · [h_s, h_p] + b_d  with b_d a per-domain bias (domain information).
    """

    def __init__(self, n_features: int, *, hidden: int, private: int, use_domain: bool, disentangle: bool) -> None:
        super().__init__()
        if hidden < 1 or private < 1:
            raise ValueError(f"hidden and private must be >= 1, got {hidden} and {private}")
        self.use_domain, self.disentangle = use_domain, disentangle
        extra = 1 if use_domain and not disentangle else 0
        self.shared = nn.Linear(n_features + extra, hidden)
        width = hidden
        if disentangle:
            # one private encoder per domain: index 0 organic, 1 ads
            self.private = nn.ModuleList(nn.Linear(n_features, private) for _ in range(2))
            width += private
        self.head = nn.Linear(width, 1)
        self.domain_bias = nn.Parameter(torch.zeros(2)) if use_domain or disentangle else None

    def representations(self, X: Tensor, is_ad: Tensor) -> tuple[Tensor, Tensor | None]:
        """(h_s, h_p): the shared and, when disentangled, the domain-specific representation."""
        if self.use_domain and not self.disentangle:
            X_in = torch.cat([X, is_ad[:, None].to(X.dtype)], dim=1)
            return F.relu(self.shared(X_in)), None
        h_shared = F.relu(self.shared(X))
        if not self.disentangle:
            return h_shared, None
        # h_p = ReLU(W_{p,d} x), each sample through its own domain's encoder
        h_ad, h_rec = F.relu(self.private[1](X)), F.relu(self.private[0](X))
        h_private = torch.where(is_ad[:, None].bool(), h_ad, h_rec)
        return h_shared, h_private

    def forward(self, X: Tensor, is_ad: Tensor) -> Tensor:
        """The click logit of each sample, shape (N,)."""
        return self.logit(*self.representations(X, is_ad), is_ad)

    def logit(self, h_shared: Tensor, h_private: Tensor | None, is_ad: Tensor) -> Tensor:
        """The click logit from the representations (so a loss that reads them computes them once)."""
        h = h_shared if h_private is None else torch.cat([h_shared, h_private], dim=1)
        # logit = v · h + b_d
        logit = self.head(h).squeeze(1)
        if self.domain_bias is not None:
            logit = logit + self.domain_bias[is_ad.long()]
        return logit


# ---------------------------------------------------------------------------------------------
# The losses
# ---------------------------------------------------------------------------------------------


def _covariance(h: Tensor) -> Tensor:
    """The sample covariance (1/(n−1)) (h − h̄)ᵀ(h − h̄) of the rows of h."""
    centred = h - h.mean(dim=0, keepdim=True)
    return centred.T @ centred / max(h.shape[0] - 1, 1)


def alignment_loss(h_ad: Tensor, h_rec: Tensor) -> Tensor:
    """Moment matching of the shared representation across domains (the reconstruction of Rec4Ad's
    alignment module): ‖mean(h_ad) − mean(h_rec)‖² + ‖Cov(h_ad) − Cov(h_rec)‖²_F / d.
    """
    if h_ad.dim() != 2 or h_rec.dim() != 2 or h_ad.shape[1] != h_rec.shape[1]:
        raise ValueError(
            f"h_ad and h_rec must be (n, d) with the same d, got {tuple(h_ad.shape)}, {tuple(h_rec.shape)}"
        )
    if h_ad.shape[0] < 2 or h_rec.shape[0] < 2:
        raise ValueError("alignment_loss needs at least two samples of each domain")
    # ‖μ_ad − μ_rec‖² + ‖Σ_ad − Σ_rec‖²_F / d
    mean_gap = (h_ad.mean(dim=0) - h_rec.mean(dim=0)).pow(2).sum()
    cov_gap = (_covariance(h_ad) - _covariance(h_rec)).pow(2).sum() / h_ad.shape[1]
    return mean_gap + cov_gap


def decorrelation_loss(h_shared: Tensor, h_private: Tensor) -> Tensor:
    """Decorrelation of the shared and the domain-specific parts (the reconstruction of Rec4Ad's
    decorrelation module): the mean squared cross-correlation, mean_{jk} corr(h_s,j, h_p,k)².
    """
    if h_shared.shape[0] != h_private.shape[0] or h_shared.shape[0] < 2:
        raise ValueError(
            f"h_shared and h_private need the same number (>= 2) of rows, got {h_shared.shape[0]}, {h_private.shape[0]}"
        )

    def standardise(h: Tensor) -> Tensor:
        centred = h - h.mean(dim=0, keepdim=True)
        return centred / (centred.pow(2).mean(dim=0, keepdim=True).sqrt() + 1e-6)

    # C_jk = mean_n z_s[n, j] · z_p[n, k]; the loss is mean_jk C_jk²
    cross = standardise(h_shared).T @ standardise(h_private) / h_shared.shape[0]
    return cross.pow(2).mean()


def ips_weights(propensity: np.ndarray, n_candidates: int, clip: float) -> np.ndarray:
    """IPS weights w = (1/m) / π(shown), clipped at `clip` and scaled to mean 1.

    With the uniform policy (π = 1/m) as the target, E_π[w · loss] is the uniform-exposure loss
    (before clipping); clipping trades that unbiasedness for variance.
    """
    propensity = np.asarray(propensity, dtype=np.float64)
    if propensity.size == 0 or (propensity <= 0).any() or (propensity > 1).any():
        raise ValueError("propensity must be a non-empty array of probabilities in (0, 1]")
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    if not clip > 0:
        raise ValueError(f"clip must be > 0 (a cap on the weight), got {clip}")
    # w = (1/m) / π, capped
    weights = np.minimum((1.0 / n_candidates) / propensity, clip)
    return weights / weights.mean()
