"""The lattice side of GLVQ: Babai rounding, μ-law companding, and a learned generator per group.

`babai_round` finds integer coordinates z = round(G⁻¹ x) clamped to b bits; `nearest_point`
checks it by brute force; `mu_law` and `mu_law_inverse` compand a group; `glvq_quantize` fits
one weight matrix (Cholesky start, alternating Babai rounding and gradient steps on the layer's
output error with the λ‖G − G⁽⁰⁾‖² anchor) and returns a `GLVQCode`, which `decode` turns back
into weights with one matrix-vector product per sub-vector. `bits_per_weight` is the honest
size: index bits plus side information.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn

FP16_BITS = 16  # every stored real number (G, μ, scales) is charged as fp16
WIDTH_CODE_BITS = 2  # a group's bit width (N − 1, N or N + 1) in a 2-bit code


def _check_bits(bits: int | Tensor, name: str = "bits") -> None:
    values = bits.tolist() if isinstance(bits, Tensor) else [bits]
    values = values if isinstance(values, list) else [values]
    if not all(isinstance(b, int) and 1 <= b <= 16 for b in values):
        raise ValueError(f"{name} must be integers in [1, 16], got {bits!r}")


def index_range(bits: int | Tensor) -> tuple[int | Tensor, int | Tensor]:
    """The signed range a b-bit index holds: [−2^(b−1), 2^(b−1) − 1]."""
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


# ---------------------------------------------------------------------------------------------
# Babai rounding and the lattice
# ---------------------------------------------------------------------------------------------


def babai_round(G: Tensor, X: Tensor, bits: int | Tensor | None = None) -> Tensor:
    """Integer lattice coordinates of the columns of X: Z = round(G⁻¹ X) (Babai's rounding).

    G: (..., d, d) generator(s), X: (..., d, n). With `bits` (an int, or one per leading index of
    G), Z is clamped to the b-bit range [−2^(b−1), 2^(b−1) − 1] and checked to lie in it. Babai's
    rounding is the nearest lattice point only when G's columns are orthogonal; elsewhere it is a
    cheap approximation (`nearest_point` measures the gap by brute force).
    """
    if G.dim() < 2 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"G must be (..., d, d), got shape {tuple(G.shape)}")
    if X.dim() < 2 or X.shape[-2] != G.shape[-1]:
        raise ValueError(f"X must be (..., {G.shape[-1]}, n) to match G, got shape {tuple(X.shape)}")
    # Z = round(G⁻¹ X), solved rather than inverted
    Z = torch.round(torch.linalg.solve(G, X))
    if bits is not None:
        if isinstance(bits, Tensor):
            _check_bits(bits.long())
            lo, hi = index_range(bits.to(Z.dtype))
            shape = bits.shape + (1,) * (Z.dim() - bits.dim())
            lo, hi = lo.reshape(shape), hi.reshape(shape)
        else:
            _check_bits(bits)
            lo, hi = index_range(bits)
        Z = torch.maximum(torch.minimum(Z, torch.as_tensor(hi, dtype=Z.dtype)), torch.as_tensor(lo, dtype=Z.dtype))
        assert bool(Z.ge(lo).all() and Z.le(hi).all()), "an index left its b-bit range"
    return Z


def nearest_point(G: Tensor, x: Tensor, radius: int = 1) -> Tensor:
    """The nearest lattice point to x, by brute force over z ∈ babai(x) + {−radius..radius}^d.

    G: (d, d), x: (d,). Exact within the searched neighbourhood; used to measure how far Babai's
    rounding is from the nearest point.
    """
    d = G.shape[0]
    if x.shape != (d,):
        raise ValueError(f"x must be one vector of shape ({d},), got {tuple(x.shape)}")
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    center = babai_round(G, x[:, None])[:, 0]
    offsets = torch.tensor(list(itertools.product(range(-radius, radius + 1), repeat=d)), dtype=G.dtype)
    candidates = center[None, :] + offsets  # (k, d)
    # ‖G z − x‖² for every candidate z
    distances = ((candidates @ G.T - x[None, :]) ** 2).sum(dim=1)
    return candidates[int(torch.argmin(distances))]


# ---------------------------------------------------------------------------------------------
# Companding
# ---------------------------------------------------------------------------------------------


def mu_law(w: Tensor, mu: Tensor, scale: Tensor) -> Tensor:
    """μ-law companding: F(w) = s · sign(w) · ln(1 + μ|w|/s) / ln(1 + μ), per group.

    mu, scale broadcast against w (one value per group). F is odd, maps [−s, s] onto itself and
    stretches small |w|, so a uniform code of F(w) has finer levels near zero.
    """
    return scale * torch.sign(w) * torch.log1p(mu * w.abs() / scale) / torch.log1p(mu)


def mu_law_inverse(y: Tensor, mu: Tensor, scale: Tensor) -> Tensor:
    """The inverse compander: F⁻¹(y) = s · sign(y) · ((1 + μ)^{|y|/s} − 1) / μ."""
    return scale * torch.sign(y) * torch.expm1(y.abs() / scale * torch.log1p(mu)) / mu


# μ⁽⁰⁾ candidates: the paper's range [10, 255], picked per lattice by the output error at G⁽⁰⁾
MU_GRID = (10.0, 40.0, 255.0)
#: μ's range in the paper, [10, 255]; with `GLVQSettings.mu_free` (a departure) μ may fall to `MU_FREE_MIN`,
#: where the compander is the identity to within a part in a thousand, and μ⁽⁰⁾ is picked from `MU_FREE_GRID`.
MU_RANGE = (10.0, 255.0)
MU_FREE_MIN = 1e-3
MU_FREE_GRID = (MU_FREE_MIN, 1.0, *MU_GRID)


# ---------------------------------------------------------------------------------------------
# GLVQ for one weight matrix
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GLVQSettings:
    """How GLVQ codes one weight matrix."""

    dim: int = 4  # lattice dimension d: sub-vectors of d consecutive weights of a row
    group_size: int = 2048  # weights per group: whole rows, group_size / in_features of them
    iterations: int = 10  # alternations of Babai rounding and one gradient step on (G, μ)
    lr: float = 0.01  # Adam step on G in units of G⁽⁰⁾'s scale (and on log μ)
    lam: float = 0.01  # λ of the anchor term λ‖G − G⁽⁰⁾‖² / ‖G⁽⁰⁾‖², relative to the output error
    companding: bool = True  # μ-law companding per group (False: the identity)
    shared: bool = False  # one lattice for all groups of the matrix instead of one per group
    learn: bool = True  # False keeps the scaled Cholesky initialization G⁽⁰⁾
    row_scale: bool = True  # divide each row by its RMS (one fp16 number per row, as RTN stores) before coding
    cubic: bool = False  # G⁽⁰⁾ = α σ I instead of α · chol(Cov): a scalar grid in the lattice's place (a falsifier)
    global_mu: bool = False  # one μ for every group of the matrix (the paper's "global companding" ablation)
    mu_free: bool = False  # μ free down to MU_FREE_MIN instead of the paper's [10, 255] (a departure)
    mu_init: tuple[float, ...] = ()  # μ⁽⁰⁾ candidates (empty: MU_GRID, or MU_FREE_GRID with mu_free)
    # each group coded with the fitted lattice of the next group of its width in the matrix (a falsifier: lattices
    # per group, not fitted to their group); kept out of the repr, so every other configuration's repr is unchanged
    swapped: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("dim", "group_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.iterations < 0 or self.lr <= 0 or self.lam < 0:
            raise ValueError(f"need iterations >= 0, lr > 0, lam >= 0; got {self.iterations}, {self.lr}, {self.lam}")


@dataclass
class GLVQCode:
    """One matrix coded by GLVQ: integer coordinates and the per-group side information."""

    Z: Tensor  # (g, d, n) integer coordinates (stored as b_g-bit indices)
    G: Tensor  # (g, d, d) each group's generator (groups that share a lattice hold the same G)
    mu: Tensor  # (g,) companding μ (0: no companding)
    scale: Tensor  # (g,) compander scale s (max |w| of the group)
    bits: Tensor  # (g,) bits per index coordinate
    shape: tuple[int, int]  # the matrix's (out, in)
    n_lattices: int  # distinct generators stored: g per group, fewer when shared
    row_scale: Tensor | None = None  # (out,) fp16 RMS of each row, or None
    n_mu: int | None = None  # distinct μ stored: one per group (None), or 1 with one global μ
    steps: tuple[int, int] | None = None  # (median over lattices of the alternation at the best error, alternations)

    def side_bits(self) -> int:
        """Side information in bits: d² fp16 numbers per stored G; per group μ and s in fp16 (when
        companding) and a 2-bit code of its bit width; one fp16 scale per row (when row-scaled)."""
        g, d = self.G.shape[0], self.G.shape[1]
        companded = bool((self.mu > 0).any())
        per_group = (FP16_BITS if companded else 0) + WIDTH_CODE_BITS
        mus = (g if self.n_mu is None else self.n_mu) if companded else 0
        rows = 0 if self.row_scale is None else FP16_BITS * self.shape[0]
        return self.n_lattices * d * d * FP16_BITS + g * per_group + mus * FP16_BITS + rows

    def index_bits(self) -> int:
        """Index bits: every coordinate of group g costs b_g bits."""
        return int((self.bits.to(torch.long) * self.Z[0].numel()).sum())


def group_rows(W: Tensor, group_size: int, dim: int) -> int:
    """Rows per group: group_size / in_features, checked to tile W and the lattice dimension."""
    out_features, in_features = W.shape
    if in_features % dim:
        raise ValueError(f"in_features ({in_features}) must be a multiple of the lattice dim ({dim})")
    if group_size < in_features or group_size % in_features or out_features % (group_size // in_features):
        raise ValueError(
            f"group_size ({group_size}) must be a multiple of in_features ({in_features}) "
            f"and tile the {out_features} rows in whole groups"
        )
    return group_size // in_features


def _to_vectors(Y: Tensor, rows: int, dim: int) -> Tensor:
    """(out, in) → (g, d, n): group g holds `rows` rows, cut into sub-vectors of d consecutive weights."""
    out_features, in_features = Y.shape
    g = out_features // rows
    return Y.reshape(g, rows * in_features // dim, dim).transpose(1, 2)


def _from_vectors(V: Tensor, shape: tuple[int, int]) -> Tensor:
    """The inverse of `_to_vectors`."""
    return V.transpose(1, 2).reshape(shape)


def decode(code: GLVQCode) -> Tensor:
    """Ŵ = F_μ⁻¹(G (Z + ½)): one matrix-vector product per sub-vector, then the expander."""
    # ŷ = G (z + ½): the lattice coset with the 2^b levels symmetric about zero
    Y = code.G @ (code.Z + 0.5)
    W = _from_vectors(Y, code.shape)
    if bool((code.mu > 0).any()):
        rows = code.shape[0] // code.G.shape[0]
        mu, scale = code.mu.repeat_interleave(rows)[:, None], code.scale.repeat_interleave(rows)[:, None]
        W = mu_law_inverse(W, mu, scale)
    if code.row_scale is not None:
        W = W * code.row_scale[:, None]
    return W


def output_error(W: Tensor, W_hat: Tensor, H: Tensor, rows: int) -> Tensor:
    """Per group, ‖(W_g − Ŵ_g) X‖² / n = Σ_rows Δw H Δwᵀ with H = X Xᵀ / n: shape (g,)."""
    delta = W - W_hat
    per_row = ((delta @ H) * delta).sum(dim=1)
    return per_row.reshape(-1, rows).sum(dim=1)


def glvq_quantize(W: Tensor, H: Tensor, bits: int | Tensor, settings: GLVQSettings | None = None) -> GLVQCode:
    """Code W (out × in) with GLVQ, given H = X Xᵀ / n of its calibration inputs X (in × n).

    1. companding: Y = F_μ(W) per group (if settings.companding), μ⁽⁰⁾ picked from `MU_GRID` by
       the output error at G⁽⁰⁾;
    2. G⁽⁰⁾ = α · chol(Cov(sub-vectors of Y)), α picked from a grid on the output error;
    3. `iterations` times: Z = babai(G, Y − G·½) clamped to b bits; one Adam step on (G, log μ)
       on Σ_g ‖(W_g − Ŵ_g) X‖² / ‖W_g X‖² + λ ‖G − G⁽⁰⁾‖² / ‖G⁽⁰⁾‖²;
    4. keep, per lattice, the G and μ with the lowest output error seen (G⁽⁰⁾ included), rounded
       to fp16 as they are stored and charged; Z is rounded with the stored values.

    `bits` is one int or one per group. With settings.shared, the groups of one bit width share
    one lattice (its covariance and α are pooled over them); otherwise every group has its own.
    """
    settings = settings or GLVQSettings()
    if not isinstance(W, Tensor) or W.dim() != 2 or not isinstance(H, Tensor) or H.shape != (W.shape[1], W.shape[1]):
        raise ValueError(
            f"W must be an (out, in) tensor and H (in, in); got {getattr(W, 'shape', W)} and {getattr(H, 'shape', H)}"
        )
    on = W.device
    W, H = W.detach().double(), H.detach().double().to(on)
    W_full, row_scale = W, None
    if settings.row_scale:
        # r = RMS of each row, stored in fp16; the lattice codes W / r
        row_scale = W.pow(2).mean(dim=1).sqrt().clamp_min(1e-12).half().double()
        W = W / row_scale[:, None]
    d = settings.dim
    rows = group_rows(W, settings.group_size, d)
    g = W.shape[0] // rows
    bits_t = torch.as_tensor(bits, device=on).long().expand(g).clone()
    _check_bits(bits_t)
    # which stored lattice each group uses
    if settings.shared:
        _, lattice_of = torch.unique(bits_t, return_inverse=True)
    else:
        lattice_of = torch.arange(g, device=on)
    n_lattices = int(lattice_of.max()) + 1
    groups_per_lattice = torch.bincount(lattice_of, minlength=n_lattices).double()
    first_group = torch.full((n_lattices,), g, device=on).scatter_reduce(
        0, lattice_of, torch.arange(g, device=on), reduce="amin"
    )

    def per_lattice(values: Tensor) -> Tensor:
        """Sum (..., g) over the groups of each lattice: (..., L)."""
        out = torch.zeros(*values.shape[:-1], n_lattices, dtype=values.dtype, device=on)
        return out.index_add(-1, lattice_of, values)

    Wg = W.reshape(g, -1)
    n_mu = 1 if settings.global_mu else None
    mu_grid = settings.mu_init or (MU_FREE_GRID if settings.mu_free else MU_GRID)
    mu_lo, mu_hi = (MU_FREE_MIN, MU_RANGE[1]) if settings.mu_free else MU_RANGE
    energy = output_error(W_full, torch.zeros_like(W), H, rows).clamp_min(1e-30)  # ‖W_g X‖²
    scale = Wg.abs().amax(dim=1).clamp_min(1e-12).half().double()
    zeros = torch.zeros(g, dtype=W.dtype, device=on)

    def compand(mu: Tensor) -> Tensor:
        if not settings.companding:
            return W
        return mu_law(W, mu.repeat_interleave(rows)[:, None], scale.repeat_interleave(rows)[:, None])

    def code_for(G: Tensor, mu: Tensor) -> GLVQCode:
        V = _to_vectors(compand(mu), rows, d)
        # Z = round(G⁻¹ (y − G·½)) = round(G⁻¹ y − ½), clamped to b bits
        Z = babai_round(G, V - G @ torch.full_like(V[:, :, :1], 0.5), bits_t)
        return GLVQCode(Z, G, mu, scale, bits_t, tuple(W.shape), n_lattices, row_scale, n_mu)

    def error_of(G: Tensor, mu: Tensor) -> Tensor:
        return output_error(W_full, decode(code_for(G, mu)), H, rows) / energy

    def errors_of(Gs: Tensor, mu: Tensor) -> Tensor:
        """`error_of` for k candidate generators per group at once, Gs (k, g, d, d): errors (k, g).

        The k candidates are coded as one stacked matrix of k copies of W (k · g groups)."""
        k = Gs.shape[0]
        G = Gs.reshape(k * g, d, d)
        V = _to_vectors(compand(mu), rows, d).repeat(k, 1, 1)
        Z = babai_round(G, V - G @ torch.full_like(V[:, :, :1], 0.5), bits_t.repeat(k))
        stacked_rows = None if row_scale is None else row_scale.repeat(k)
        shape = (k * W.shape[0], W.shape[1])
        code = GLVQCode(Z, G, mu.repeat(k), scale.repeat(k), bits_t.repeat(k), shape, n_lattices, stacked_rows)
        return output_error(W_full.repeat(k, 1), decode(code), H, rows).reshape(k, g) / energy

    def initial(mu0: Tensor) -> tuple[Tensor, Tensor]:
        """G⁽⁰⁾ = α · chol(Cov) per lattice for companding μ⁽⁰⁾, and its output error per lattice."""
        # the Cholesky factor of the sub-vectors' covariance, pooled over each lattice's groups
        V0 = _to_vectors(compand(mu0), rows, d)
        cov_g = V0 @ V0.transpose(1, 2) / V0.shape[2]
        cov = torch.zeros(n_lattices, d, d, dtype=W.dtype, device=on).index_add(0, lattice_of, cov_g)
        cov = cov / groups_per_lattice[:, None, None]
        eye = torch.eye(d, dtype=W.dtype, device=on)
        if settings.cubic:
            # a scalar grid: the same step σ = √(mean variance) on every axis
            chol = cov.diagonal(dim1=1, dim2=2).mean(dim=1).sqrt()[:, None, None] * eye
        else:
            chol = torch.linalg.cholesky(cov + 1e-6 * cov.diagonal(dim1=1, dim2=2).mean(dim=1)[:, None, None] * eye)
        # α: the step in whitened units, on a grid around 4 / 2^b (about RTN's optimum for a Gaussian)
        alphas = 4.0 / 2.0 ** bits_t[first_group].double()
        grid = torch.exp(torch.linspace(math.log(0.3), math.log(2.5), 10, dtype=W.dtype)).to(on)
        # every α of the grid at once: G = α₀ · a · chol for each a in the grid
        candidates = (chol[None] * (alphas[None, :] * grid[:, None])[:, :, None, None])[:, lattice_of]
        errors = per_lattice(errors_of(candidates, mu0))  # (len(grid), L)
        best = torch.argmin(errors, dim=0)  # (L,)
        return chol * (alphas * grid[best])[:, None, None], errors.gather(0, best[None])[0]

    # μ⁽⁰⁾ and G⁽⁰⁾: μ on a grid in [10, 255] (one value per lattice), α on a grid, by output error
    if settings.companding:
        candidates = [initial(torch.full((g,), mu, dtype=W.dtype, device=on)) for mu in mu_grid]
        errs = torch.stack([e for _, e in candidates])  # (len(mu_grid), L)
        # with one global μ: the grid value with the lowest total error over the matrix
        pick = torch.argmin(errs.sum(dim=1)).expand(n_lattices) if settings.global_mu else torch.argmin(errs, dim=0)
        G0 = torch.stack([candidates[int(k)][0][lat] for lat, k in enumerate(pick)])
        best_err0 = errs.gather(0, pick[None])[0]
        mu0 = torch.tensor(mu_grid, dtype=W.dtype, device=on)[pick][lattice_of]
    else:
        mu0 = zeros
        G0, best_err0 = initial(mu0)
    if not settings.learn or settings.iterations == 0:
        return code_for(_fp16(G0)[lattice_of], _fp16(mu0))

    # learn G (in units of G⁽⁰⁾'s scale) and log μ by alternating Babai and Adam steps
    unit = G0.norm(dim=(1, 2), keepdim=True) / math.sqrt(d)
    P = nn.Parameter(G0 / unit)
    # one log μ per group, or a single one shared by every group (global companding)
    log_mu = nn.Parameter(torch.log(mu0.clamp_min(1e-6)[:1] if settings.global_mu else mu0.clamp_min(1e-6)))
    optimizer = torch.optim.Adam([P, log_mu] if settings.companding else [P], lr=settings.lr)
    best_G, best_mu, best_err = G0.clone(), mu0.clone(), best_err0.clone()
    best_at = torch.zeros(n_lattices, dtype=torch.long, device=on)  # the alternation of each lattice's best error

    def current() -> tuple[Tensor, Tensor]:
        mu = log_mu.exp().clamp(mu_lo, mu_hi).expand(g) if settings.companding else mu0
        return P * unit, mu

    def keep_best(G: Tensor, mu: Tensor, err_g: Tensor, step: int) -> None:
        # early stopping on the calibration output error: per lattice (with one global μ, for all at once)
        err = per_lattice(err_g)
        better = err < best_err
        if settings.global_mu:
            better = (err.sum() < best_err.sum()).expand(n_lattices).clone()
        best_G[better], best_err[better] = G[better], err[better]
        best_at[better] = step
        take = better[lattice_of]
        best_mu[take] = mu[take]

    for step in range(settings.iterations):
        G, mu = current()
        with torch.no_grad():
            # (a) Babai rounding with G and μ fixed
            Z = code_for(G[lattice_of], mu).Z
        # (b) a gradient step on G and μ with Z fixed
        W_hat = decode(GLVQCode(Z, G[lattice_of], mu, scale, bits_t, tuple(W.shape), n_lattices, row_scale))
        err_g = output_error(W_full, W_hat, H, rows) / energy
        with torch.no_grad():
            keep_best(G.detach(), mu.detach(), err_g.detach(), step)
        # L = Σ_g ‖ΔW_g X‖² / ‖W_g X‖² + λ ‖G − G⁽⁰⁾‖² / ‖G⁽⁰⁾‖²
        anchor = ((G - G0) ** 2).sum(dim=(1, 2)) / (G0**2).sum(dim=(1, 2))
        loss = err_g.sum() + settings.lam * (anchor * groups_per_lattice).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        G, mu = current()
        keep_best(G, mu, error_of(G[lattice_of], mu), settings.iterations)
    # G and μ are stored in fp16: decode (and round Z) with the stored values
    G_stored = _fp16(best_G.detach())[lattice_of]
    if settings.swapped:
        for width in torch.unique(bits_t):
            members = torch.nonzero(bits_t == width).flatten()
            G_stored[members] = G_stored[members.roll(1)]
    code = code_for(G_stored, _fp16(best_mu.detach()))
    code.steps = (int(best_at.double().median()), settings.iterations)
    return code


def _fp16(x: Tensor) -> Tensor:
    """x rounded to fp16, as it is stored and charged (`FP16_BITS`), kept in x's dtype."""
    return x.half().to(x.dtype)


# ---------------------------------------------------------------------------------------------
# Bits per weight
# ---------------------------------------------------------------------------------------------


def bits_per_weight(index_bits: int, side_bits: int, n_weights: int) -> float:
    """The honest size: (index bits + side-information bits) / weights."""
    if n_weights < 1 or index_bits < 0 or side_bits < 0:
        raise ValueError(f"need n_weights >= 1 and non-negative bit counts, got {index_bits}, {side_bits}, {n_weights}")
    return (index_bits + side_bits) / n_weights


def replace_settings(settings: GLVQSettings, **changes: object) -> GLVQSettings:
    """A copy of `settings` with `changes` applied."""
    return GLVQSettings(**{**asdict(settings), **changes})
