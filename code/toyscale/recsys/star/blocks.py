"""STAR's building blocks and the baselines it is compared with (see the package docstring)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

NORMS = ("pn", "bn", "pn_shared")


def _check_domain(domain: Tensor, n_domains: int) -> None:
    """Raise ValueError unless `domain` is a 1-D integer tensor of ids in [0, n_domains)."""
    if domain.dim() != 1 or domain.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"domain must be a 1-D integer tensor, got {domain.dtype} of shape {tuple(domain.shape)}")
    if domain.numel() and (int(domain.min()) < 0 or int(domain.max()) >= n_domains):
        raise ValueError(f"domain ids must lie in [0, {n_domains}), got [{int(domain.min())}, {int(domain.max())}]")


def per_domain(fn: Callable[[Tensor, int], Tensor], h: Tensor, domain: Tensor) -> Tensor:
    """Row-wise out[i] = fn(h[rows of domain d], d)[i] for every domain d present in the batch.

    A training batch holds one domain (one call); a test batch holds several (one call each).
    """
    d = _single_domain(domain)
    if d is not None:
        return fn(h, d)
    out: Tensor | None = None
    for d in torch.unique(domain).tolist():
        rows = domain == d
        part = fn(h[rows], d)
        if out is None:
            out = part.new_zeros((h.shape[0], *part.shape[1:]))
        out[rows] = part
    assert out is not None, "per_domain needs at least one row"
    return out


def _single_domain(domain: Tensor) -> int | None:
    """The batch's one domain id, or None when the batch mixes domains."""
    if domain.numel() and bool((domain == domain[0]).all()):
        return int(domain[0])
    return None


def domain_linear(h: Tensor, weight: Tensor, bias: Tensor, domain: Tensor) -> Tensor:
    """Row-wise out_i = W_{d_i} h_i + b_{d_i}, with weight (M, out, in) and bias (M, out).

    A single-domain batch is one matrix product. A batch sorted by domain (as `run` feeds mixed
    batches) is one product per domain on contiguous slices; any other batch computes every
    domain's product, (M, N, out), and keeps each row's own.
    """
    d = _single_domain(domain)
    if d is not None:
        return F.linear(h, weight[d], bias[d])
    if bool((domain[1:] >= domain[:-1]).all()):
        counts = torch.bincount(domain, minlength=weight.shape[0]).tolist()
        parts = h.split(counts)
        return torch.cat([F.linear(part, weight[i], bias[i]) for i, part in enumerate(parts) if part.shape[0]])
    every = torch.matmul(h.unsqueeze(0), weight.transpose(1, 2))  # (M, N, out)
    return every[domain, torch.arange(h.shape[0], device=h.device)] + bias[domain]


class DomainLinear(nn.Module):
    """One linear layer per domain, applied row by row: out_i = W_{d_i} h_i + b_{d_i}.

    Each domain's layer has nn.Linear's default initialization, drawn independently.
    """

    def __init__(self, n_in: int, n_out: int, n_domains: int) -> None:
        super().__init__()
        layers = [nn.Linear(n_in, n_out) for _ in range(n_domains)]
        self.weight = nn.Parameter(torch.stack([layer.weight.detach() for layer in layers]))
        self.bias = nn.Parameter(torch.stack([layer.bias.detach() for layer in layers]))

    def forward(self, h: Tensor, domain: Tensor) -> Tensor:
        return domain_linear(h, self.weight, self.bias, domain)


class DomainMLP(nn.Module):
    """One MLP per domain (a tower per domain), ReLU between layers, evaluated row by row."""

    def __init__(self, widths: Sequence[int], n_domains: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DomainLinear(a, b, n_domains) for a, b in itertools.pairwise(widths))

    def forward(self, h: Tensor, domain: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            h = layer(h, domain)
            if i < len(self.layers) - 1:
                h = torch.relu(h)
        return h


# ---------------------------------------------------------------------------------------------
# The three pieces of STAR
# ---------------------------------------------------------------------------------------------


class PartitionedNorm(nn.Module):
    """Partitioned normalization (STAR): z' = (γ ⊙ γ_p) ⊙ (z − μ)/√(σ² + ε) + (β + β_p).

    In training, μ and σ² are the statistics of the rows of domain p in the batch (a batch
    usually holds one domain), and domain p's moving averages are updated. At test time each
    row is normalized with its own domain's moving averages. γ, β are shared; γ_p (ones) and
    β_p (zeros) belong to domain p.
    """

    def __init__(self, n_features: int, n_domains: int, *, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        if n_features < 1 or n_domains < 1:
            raise ValueError(f"n_features and n_domains must be >= 1, got {n_features} and {n_domains}")
        if not 0.0 < momentum <= 1.0:
            raise ValueError(f"momentum must be in (0, 1], got {momentum}")
        self.n_domains, self.eps, self.momentum = n_domains, eps, momentum
        self.gamma = nn.Parameter(torch.ones(n_features))
        self.beta = nn.Parameter(torch.zeros(n_features))
        self.domain_gamma = nn.Parameter(torch.ones(n_domains, n_features))
        self.domain_beta = nn.Parameter(torch.zeros(n_domains, n_features))
        self.register_buffer("running_mean", torch.zeros(n_domains, n_features))
        self.register_buffer("running_var", torch.ones(n_domains, n_features))

    def forward(self, z: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        return per_domain(self._normalize, z, domain)

    def _normalize(self, z: Tensor, d: int) -> Tensor:
        if self.training:
            # μ, σ² of the batch's rows of domain d; update d's moving averages
            mean, var = z.mean(0), z.var(0, unbiased=False)
            with torch.no_grad():
                self.running_mean[d].lerp_(mean, self.momentum)
                self.running_var[d].lerp_(var, self.momentum)
        else:
            mean, var = self.running_mean[d], self.running_var[d]
        # z' = (γ ⊙ γ_p) ⊙ (z − μ) / √(σ² + ε) + (β + β_p)
        return (self.gamma * self.domain_gamma[d]) * (z - mean) / torch.sqrt(var + self.eps) + (
            self.beta + self.domain_beta[d]
        )

    def affine(self, d: int) -> tuple[Tensor, Tensor]:
        """The test-time map of domain d as z' = a ⊙ z + c: a = γγ_p/√(σ_p² + ε), c = β + β_p − a ⊙ μ_p."""
        scale = self.gamma * self.domain_gamma[d] / torch.sqrt(self.running_var[d] + self.eps)
        return scale, self.beta + self.domain_beta[d] - scale * self.running_mean[d]


class SharedStatisticsPN(nn.Module):
    """Partitioned normalization without its per-domain statistics: z' = (γ ⊙ γ_p) ⊙ (z − μ)/√(σ² + ε) + (β + β_p)
    with μ, σ² the statistics of the whole batch in training and one moving average at test time (batch
    norm's), and the per-domain scale and offset γ_p, β_p of PN kept (a falsifier's change).
    """

    def __init__(self, n_features: int, n_domains: int, *, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        self.n_domains = n_domains
        self.norm = nn.BatchNorm1d(n_features, eps=eps, momentum=momentum)
        self.domain_gamma = nn.Parameter(torch.ones(n_domains, n_features))
        self.domain_beta = nn.Parameter(torch.zeros(n_domains, n_features))

    def forward(self, z: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        bn = self.norm
        # batch norm without its affine part, then (γ ⊙ γ_p) and (β + β_p) per row's domain
        z_hat = F.batch_norm(z, bn.running_mean, bn.running_var, None, None, self.training, bn.momentum, bn.eps)
        return (bn.weight * self.domain_gamma[domain]) * z_hat + (bn.bias + self.domain_beta[domain])

    def affine(self, d: int) -> tuple[Tensor, Tensor]:
        """The test-time map of domain d as z' = a ⊙ z + c."""
        bn = self.norm
        scale = bn.weight * self.domain_gamma[d] / torch.sqrt(bn.running_var + bn.eps)
        return scale, bn.bias + self.domain_beta[d] - scale * bn.running_mean


class DomainBatchNorm(nn.Module):
    """Ordinary batch normalization behind the same interface: one set of statistics for all domains.

    z' = γ ⊙ (z − μ)/√(σ² + ε) + β, batch statistics in training, one moving average at test time.
    """

    def __init__(self, n_features: int, n_domains: int, *, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        self.n_domains = n_domains
        self.norm = nn.BatchNorm1d(n_features, eps=eps, momentum=momentum)

    def forward(self, z: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        return self.norm(z)

    def affine(self, d: int) -> tuple[Tensor, Tensor]:
        """The test-time map as z' = a ⊙ z + c (the same for every domain d)."""
        bn = self.norm
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        return scale, bn.bias - scale * bn.running_mean


class StarTopologyFCN(nn.Module):
    """The star-topology FCN (STAR): layer l of domain p is φ((W_p ⊙ W)ᵀ x + b_p + b).

    Shared W (out × in) and b get their usual initialization; every W_p starts at ones and b_p
    at zeros, so at step 0 every domain computes the shared network. φ is ReLU on the hidden
    layers and the identity on the last, which returns one logit per row.
    """

    def __init__(self, widths: Sequence[int], n_domains: int) -> None:
        super().__init__()
        widths = list(widths)
        if len(widths) < 2 or any(w < 1 for w in widths) or widths[-1] != 1:
            raise ValueError(f"widths must be >= 2 positive sizes ending in 1 (one logit), got {widths}")
        if n_domains < 1:
            raise ValueError(f"n_domains must be >= 1, got {n_domains}")
        self.n_domains = n_domains
        self.weight, self.bias = nn.ParameterList(), nn.ParameterList()
        self.domain_weight, self.domain_bias = nn.ParameterList(), nn.ParameterList()
        for n_in, n_out in itertools.pairwise(widths):
            shared = nn.Linear(n_in, n_out)  # the shared layer, with torch's default initialization
            self.weight.append(nn.Parameter(shared.weight.detach().clone()))
            self.bias.append(nn.Parameter(shared.bias.detach().clone()))
            self.domain_weight.append(nn.Parameter(torch.ones(n_domains, n_out, n_in)))
            self.domain_bias.append(nn.Parameter(torch.zeros(n_domains, n_out)))

    def domain_layers(self, d: int) -> list[tuple[Tensor, Tensor]]:
        """Domain d's effective layers: (W_d ⊙ W, b_d + b) for each layer."""
        return [
            # W_d ⊙ W (element-wise) and b_d + b
            (self.domain_weight[i][d] * self.weight[i], self.domain_bias[i][d] + self.bias[i])
            for i in range(len(self.weight))
        ]

    def forward(self, x: Tensor, domain: Tensor) -> Tensor:
        """One logit per row, shape (N,), each row through its own domain's network."""
        _check_domain(domain, self.n_domains)
        h, n_layers = x, len(self.weight)
        for i in range(n_layers):
            # out = φ((W_p ⊙ W)ᵀ in + b_p + b), every domain's W_p ⊙ W at once, each row its own
            weight = self.domain_weight[i] * self.weight[i]
            bias = self.domain_bias[i] + self.bias[i]
            h = domain_linear(h, weight, bias, domain)
            if i < n_layers - 1:
                h = torch.relu(h)
        return h.squeeze(1)

    def freeze_domain_weights(self) -> None:
        """Keep every W_p at ones and b_p at zeros: the star topology switched off (a shared network)."""
        for p in (*self.domain_weight, *self.domain_bias):
            p.requires_grad_(False)

    def freeze_centre(self) -> None:
        """Keep the shared W, b at their initial values: only the domains' own W_p, b_p learn (no sharing)."""
        for p in (*self.weight, *self.bias):
            p.requires_grad_(False)


class AuxiliaryNetwork(nn.Module):
    """The auxiliary network (STAR): s_aux = MLP(e_d), a small MLP on the domain's embedding.

    The paper feeds it the domain indicator and features that describe the domain; both are
    constant within a domain, so its logit is one number per domain, added to the main logit.
    """

    def __init__(self, n_domains: int, *, embedding_dim: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.n_domains = n_domains
        self.embedding = nn.Embedding(n_domains, embedding_dim)
        self.mlp = nn.Sequential(nn.Linear(embedding_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        # s_aux = MLP(e_d)
        return self.mlp(self.embedding(domain)).squeeze(1)


class STAR(nn.Module):
    """The STAR model: pCTR = σ(s_main + s_aux), s_main = StarTopologyFCN(PN(x), d), s_aux = Aux(d).

    norm='bn' swaps partitioned normalization for batch normalization and aux=False drops the
    auxiliary network: the paper's ablations.
    """

    def __init__(
        self,
        n_features: int,
        n_domains: int,
        *,
        hidden: Sequence[int] = (64, 32),
        norm: str = "pn",
        aux: bool = True,
        aux_embedding_dim: int = 4,
        aux_hidden: int = 8,
        standardize: Standardize | None = None,
    ) -> None:
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        self.n_domains, self.norm_kind = n_domains, norm
        # an optional fixed input standardization before the normalization layer (STAR-BN behind per-domain
        # standardization, as every per-domain baseline gets it)
        self.standardize = standardize
        layer = {"pn": PartitionedNorm, "bn": DomainBatchNorm, "pn_shared": SharedStatisticsPN}[norm]
        self.norm = layer(n_features, n_domains)
        self.fcn = StarTopologyFCN([n_features, *hidden, 1], n_domains)
        self.aux = AuxiliaryNetwork(n_domains, embedding_dim=aux_embedding_dim, hidden=aux_hidden) if aux else None

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        """The logit s_main + s_aux per row, shape (N,)."""
        if self.standardize is not None:
            X = self.standardize(X, domain)
        s_main = self.fcn(self.norm(X, domain), domain)
        if self.aux is None:
            return s_main
        # pCTR = σ(s_main + s_aux): the logit is the sum
        return s_main + self.aux(domain)


class FoldedStar(nn.Module):
    """A trained STAR model as plain per-domain MLPs for serving: one nn.Sequential per domain.

    Each is an ordinary network with the shape of the shared one; a request of domain d runs
    only network d, so serving costs what one shared model costs.
    """

    def __init__(self, networks: list[nn.Sequential]) -> None:
        super().__init__()
        self.networks = nn.ModuleList(networks)

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, len(self.networks))
        return per_domain(lambda h, d: self.networks[d](h).squeeze(1), X, domain)


@torch.no_grad()
def fold_star(model: STAR) -> FoldedStar:
    """Fold a trained STAR model into plain per-domain layers (the paper's serving form).

    For domain d: layer l becomes an nn.Linear with weight W_d ⊙ W and bias b_d + b; the
    normalization's test-time map a_d ⊙ x + c_d is folded into the first layer
    (weight W₁ diag(a_d), bias W₁ c_d + b₁); the auxiliary logit, a constant per domain, is
    added to the last bias. The folded model gives the eval-mode model's logits.
    """
    if not isinstance(model, STAR):
        raise TypeError(f"model must be a STAR model, got {type(model).__name__}")
    if model.training:
        raise ValueError("model must be in eval mode (model.eval()): folding uses the moving statistics")
    networks = []
    for d in range(model.n_domains):
        layers = [(w.clone(), b.clone()) for w, b in model.fcn.domain_layers(d)]
        scale, offset = model.norm.affine(d)
        if model.standardize is not None:
            # a ⊙ (x − m_d)/s_d + c = (a/s_d) ⊙ x + (c − a ⊙ m_d/s_d)
            sd = model.standardize
            m_d, s_d = sd.mean[d if sd.mean.shape[0] > 1 else 0], sd.std[d if sd.std.shape[0] > 1 else 0]
            scale, offset = scale / s_d, offset - scale * m_d / s_d
        first_w, first_b = layers[0]
        # W₁ (a ⊙ x + c) + b₁ = (W₁ diag(a)) x + (W₁ c + b₁)
        layers[0] = (first_w * scale[None, :], first_w @ offset + first_b)
        if model.aux is not None:
            s_aux = model.aux(torch.tensor([d], device=first_w.device))
            layers[-1] = (layers[-1][0], layers[-1][1] + s_aux)
        modules: list[nn.Module] = []
        for i, (weight, bias) in enumerate(layers):
            linear = nn.Linear(weight.shape[1], weight.shape[0]).to(weight.device)
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
            modules.append(linear)
            if i < len(layers) - 1:
                modules.append(nn.ReLU())
        networks.append(nn.Sequential(*modules))
    return FoldedStar(networks).eval()


def mlp_flops(widths: Sequence[int]) -> int:
    """Multiply-adds ×2 of one forward pass of an MLP with these layer widths, per sample."""
    return 2 * sum(a * b for a, b in itertools.pairwise(widths))


# ---------------------------------------------------------------------------------------------
# The baselines
# ---------------------------------------------------------------------------------------------


class Standardize(nn.Module):
    """Fixed standardization x' = (x − m)/s with statistics of the training set: one row of (m, s)
    for all domains (a batch norm's test-time map, without its train/test gap), or one per domain."""

    def __init__(self, mean: Tensor, std: Tensor) -> None:
        super().__init__()
        self.register_buffer("mean", mean.float())
        self.register_buffer("std", std.float().clamp_min(1e-6))

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        if self.mean.shape[0] == 1:
            return (X - self.mean[0]) / self.std[0]
        return (X - self.mean[domain]) / self.std[domain]


def plain_mlp(widths: Sequence[int]) -> nn.Sequential:
    """Linear layers with ReLU between them."""
    modules: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        modules.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


class SharedModel(nn.Module):
    """One network for all domains, the domain as an input: s = MLP([x', onehot(d)])."""

    def __init__(self, standardize: Standardize, n_features: int, n_domains: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.standardize, self.n_domains = standardize, n_domains
        self.mlp = plain_mlp([n_features + n_domains, *hidden, 1])

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        h = torch.cat([self.standardize(X, domain), F.one_hot(domain, self.n_domains).float()], dim=1)
        return self.mlp(h).squeeze(1)


class SeparateModels(nn.Module):
    """One network per domain, each trained only on its own domain: s = MLP_d(x'_d)."""

    def __init__(self, standardize: Standardize, n_features: int, n_domains: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.standardize, self.n_domains = standardize, n_domains
        self.mlps = nn.ModuleList(plain_mlp([n_features, *hidden, 1]) for _ in range(n_domains))

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        return per_domain(lambda h, d: self.mlps[d](h).squeeze(1), self.standardize(X, domain), domain)


class SharedBottom(nn.Module):
    """A shared bottom layer and one tower per domain: s = tower_d(ReLU(W [x', onehot(d)] + b))."""

    def __init__(self, standardize: Standardize, n_features: int, n_domains: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.standardize, self.n_domains = standardize, n_domains
        self.bottom = nn.Sequential(nn.Linear(n_features + n_domains, hidden[0]), nn.ReLU())
        self.towers = DomainMLP([*hidden, 1], n_domains)

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        h = self.bottom(torch.cat([self.standardize(X, domain), F.one_hot(domain, self.n_domains).float()], dim=1))
        return self.towers(h, domain).squeeze(1)


class MMoE(nn.Module):
    """Multi-gate mixture of experts with a gate and a tower per domain (Ma et al., 2018):

    h = Σ_e softmax(G_d x̂)_e · expert_e(x̂),  s = tower_d(h),  with x̂ = [x', onehot(d)].
    """

    def __init__(
        self, standardize: Standardize, n_features: int, n_domains: int, hidden: Sequence[int], n_experts: int
    ) -> None:
        super().__init__()
        self.standardize, self.n_domains = standardize, n_domains
        width = n_features + n_domains
        self.n_experts, self.expert_width = n_experts, hidden[0]
        self.experts = nn.Linear(width, n_experts * hidden[0])  # every expert's layer at once, side by side
        self.gates = DomainLinear(width, n_experts, n_domains)
        self.towers = DomainMLP([*hidden, 1], n_domains)

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        _check_domain(domain, self.n_domains)
        x = torch.cat([self.standardize(X, domain), F.one_hot(domain, self.n_domains).float()], dim=1)
        experts = torch.relu(self.experts(x)).view(-1, self.n_experts, self.expert_width)  # (N, E, H)
        # h = Σ_e softmax(G_d x)_e · expert_e(x)
        gate = torch.softmax(self.gates(x, domain), dim=1)
        return self.towers((gate[:, :, None] * experts).sum(1), domain).squeeze(1)
