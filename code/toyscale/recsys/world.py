"""A synthetic ad world: users, items, contexts and a known ground-truth click model.

Every recsys chapter draws its click logs from here, so that the reader meets one world and
watches each paper change one thing about how it is learned from.

The generative model
--------------------
**Population.** Users u = 1..U and items i = 1..I carry latent vectors and biases. Each user
belongs to one of S segments and each item to one of C categories; the latent vectors lean
towards their group's centre, so the side features (segment, category) carry part of the signal:

    a_u = √ρ · A_{seg(u)} + √(1−ρ) · ε_u,        b_i = √ρ · B_{cat(i)} + √(1−ρ) · η_i,

with A, B, ε, η standard normal in R^k and ρ = `side_info`. Biases: β_u ~ N(0, σ_u²),
β_i ~ N(0, σ_i²).

**Activity and popularity (long tail).** A context z (a session: one user, one page of
impressions) belongs to user u with probability ∝ rank(u)^(−a_U), Zipf-like: a few heavy users
own many sessions and most users own one or two. Items are shown with probability
∝ rank(i)^(−a_I).

**The context shift (unobserved).** Each context draws a shift s_z ~ N(0, σ_z²): the traffic
source, the time of day, the intent behind the visit. No model ever sees s_z.

**Exposure.** The page holds n_z ≈ `session_size` impressions. Promotions run on busy,
high-intent pages: items carry a promotion score π_i ~ N(0, 1), and a context shows item i with
probability ∝ popularity_i · exp(γ · e_z · π_i), with γ = `exposure_confounding` and the page
signal e_z = s_z by default. With γ = 0 exposure ignores the context; with γ > 0 promoted items
are shown more on high-intent pages, so a model that cannot see s_z credits them with clicks the
context earned. With `exposure_follows_shift` ρ_e < 1 the page signal is e_z = ρ_e·s_z +
√(1 − ρ_e²)·σ_z·n_z (n_z ~ N(0, 1), drawn only then): at ρ_e = 0 exposure still varies by page,
as much as before, but no longer with the click shift, so nothing is confounded.

**Clicks.** The ground truth is a logistic model:

    logit P(y = 1 | u, i, z) = β₀ + β_u + β_i + κ · a_u·b_i / √k + s_z,

with β₀ = `base_logit` and κ = `affinity_scale`; y ~ Bernoulli(σ(logit)). The oracle's
probability σ(logit) is kept for every impression.

**Several domains** (`make_domain_log`, the STAR chapter). A platform runs M domains
(scenarios: the home feed, a search page, a mini-program) over the same users and items. Each
context falls in one domain d with probability ∝ (d + 1)^(−a_D), a long tail of domain sizes.
A model sees dense features, the user's and the item's latent vectors, through the domain's own
lens: x = μ_d + s_d ⊙ x̃ with x̃ = [a_u, b_i], a shift μ_d ~ N(0, σ_μ²) and a scale
log s_d ~ N(0, σ_s²) per domain and feature. The click logit mixes a shared function with the
domain's own:

    logit P(y = 1 | u, i, d) = β₀ + b_d + κ · (f(x̃) + ρ · g_d(x̃)) / √(1 + ρ²),

where f and every g_d are independent random one-hidden-layer tanh networks scaled to mean 0
and unit variance, b_d ~ N(0, σ_b²) and ρ = `domain_strength`. The share of domain-specific signal grows
with ρ while the total stays fixed. Nothing here has the form of a STAR network (no product of a
shared and a domain weight matrix), so the chapter's model has to *find* the structure.

**Ads and organic items** (`make_ad_log`, the Rec4Ad chapter). A feed mixes organic items
(recommendations) and ads: a share `ad_share` of the items are ads with bids, log bid_i =
ζ · b_i[0] + σ_bid · noise (ζ = `bid_correlation`). One click function serves both, with an ad
penalty δ = `ad_penalty`:

    logit P(y = 1 | u, i) = β₀ + κ · f([a_u, b_i]) − δ · is_ad(i),

f a random network as above. Each request draws a user (∝ activity) and m = `ad_candidates`
candidates, and its ranker shows one of them with probability softmax(τ · score): ads by a
legacy eCPM ranker, score = log σ(its pCTR) + log bid, whose pCTR reads f with the last
`legacy_blind` item features zeroed (τ = `exposure_bias`); organic items by a recommendation
ranker, score = κ · (f + g)/√2 with g its own objective (τ = `rec_exposure_bias`), with
`rec_traffic` times as many requests. An unbiased test log shows ads uniformly (τ = 0). Every
impression keeps its propensity, the probability its policy showed it.

**Many feature fields** (`make_field_log`, the PICASSO chapter). An industrial CTR log has F
categorical fields (user, item, shop, brand, query words, recent clicks ...), each multi-hot:
a record holds L ids of each field. Field f has V rows; its ids follow a finite, normalized Zipf
law, P(rank r) = r^(−s) / Σ_{j=1..V} j^(−s), with ranks assigned to rows in a random order per
field. Each row carries an effect w_f[r] ~ N(0, 1) and the click logit is additive over fields:

    logit P(y = 1 | record) = β₀ + κ · (1/√F) Σ_f (1/L) Σ_l w_f[id_{f,l}].

The section draws nothing from `WorldConfig`, so the worlds above are unchanged.

Extension points for later chapters: a `WorldConfig` field with a neutral default for each new
effect (domains, exposure policies, more feature fields), `sample_population` for what is drawn
once, `sample_contexts` for who sees what where, `true_logit` for the click model, and
`ClickLog.fields` for the categorical inputs a model may use. Everything is NumPy, and the same
seed gives the same log.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import TypeVar

import numpy as np

from toyscale.core.seeding import rng


@dataclass(frozen=True)
class WorldConfig:
    """The knobs of the world; the defaults give a long-tail ad world with strong context shifts."""

    n_users: int = 4000  # U: users; most of them are sparse (see user_zipf)
    n_items: int = 300  # I: items (ads)
    n_user_segments: int = 16  # S: user segments, a side feature the model sees
    n_item_categories: int = 16  # C: item categories, a side feature the model sees
    n_contexts: int = 8000  # contexts (sessions, pages) in the log
    session_size: int = 10  # mean impressions per context; sizes are uniform on [size/2, 3·size/2]
    latent_dim: int = 4  # k: rank of the user-item affinity
    side_info: float = 0.5  # ρ: share of a latent vector explained by its segment / category
    user_zipf: float = 1.1  # a_U: context ownership ∝ rank(u)^(−a_U), the long tail of users
    item_zipf: float = 0.8  # a_I: exposure ∝ rank(i)^(−a_I), the long tail of items
    base_logit: float = -2.0  # β₀: global bias (with the other terms the default click rate is about a fifth)
    user_bias_std: float = 0.7  # σ_u: spread of user biases β_u
    item_bias_std: float = 0.5  # σ_i: spread of item biases β_i
    affinity_scale: float = 1.5  # κ: weight of the user-item affinity a_u·b_i/√k
    context_shift_std: float = 1.5  # σ_z: spread of the unobserved context shift s_z
    exposure_confounding: float = 0.7  # γ: promoted items shown more on high-shift pages (0 = none)
    exposure_follows_shift: float = 1.0  # ρ_e: correlation of the page signal exposure follows with s_z (1 = s_z)
    # Several domains (read only by make_domain_log; the defaults leave the world above unchanged)
    n_domains: int = 1  # M: domains (scenarios) sharing the users and items; 1 = a single-domain world
    domain_zipf: float = 1.0  # a_D: a context falls in domain d with probability ∝ (d + 1)^(−a_D)
    domain_strength: float = 0.0  # ρ: weight of each domain's own click function against the shared one
    domain_bias_std: float = 0.0  # σ_b: spread of the per-domain click bias b_d
    domain_feature_shift: float = 0.0  # σ_μ: spread of the per-domain shift μ_d of the observed features
    domain_feature_scale: float = 0.0  # σ_s: spread of log s_d, the per-domain scale of the observed features
    domain_hidden: int = 16  # H: hidden width of the random networks f and g_d of the click function
    # Ads and organic items (read only by make_ad_log; the defaults leave the worlds above unchanged)
    ad_share: float = 0.5  # share of the items that are ads; the rest are organic items (recommendations)
    ad_penalty: float = 0.0  # δ: a user clicks an ad with logit δ lower than an organic item alike in features
    exposure_bias: float = 0.0  # τ: exposure ∝ exp(τ · ranker score) in a candidate set; 0 = uniform, no SSB
    rec_exposure_bias: float = 0.0  # τ_rec: the same for the recommendation ranker (its own, fixed selectivity)
    ad_candidates: int = 20  # m: candidate items per request; the ranker shows one of them
    rec_traffic: float = 3.0  # recommendation requests per ad request (organic traffic is larger)
    bid_correlation: float = 0.0  # ζ: log bid_i = ζ · b_i[0] + σ_bid · noise, bids follow an item feature
    bid_noise: float = 0.5  # σ_bid: the spread of log bids not explained by the item feature
    legacy_blind: int = 0  # item features the legacy ad ranker ignores (the last ones of b_i)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise TypeError(f"{f.name} must be a number, got {value!r}")
        names = ("n_users", "n_items", "n_user_segments", "n_item_categories", "n_contexts", "latent_dim")
        for name in (*names, "n_domains", "domain_hidden", "ad_candidates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.session_size < 2:
            raise ValueError(
                f"session_size must be >= 2 (a context needs two impressions to rank), got {self.session_size}"
            )
        if not 0.0 <= self.side_info <= 1.0:
            raise ValueError(f"side_info must be in [0, 1], got {self.side_info}")
        if not 0.0 <= self.exposure_follows_shift <= 1.0:
            raise ValueError(
                f"exposure_follows_shift must be in [0, 1] (a correlation with s_z), got {self.exposure_follows_shift}"
            )
        nonnegative = ("user_zipf", "item_zipf", "user_bias_std", "item_bias_std", "context_shift_std")
        domain_spreads = ("domain_zipf", "domain_strength", "domain_bias_std", "domain_feature_shift")
        ad_knobs = ("ad_penalty", "exposure_bias", "rec_exposure_bias", "rec_traffic", "bid_noise", "legacy_blind")
        for name in (*nonnegative, *domain_spreads, "domain_feature_scale", *ad_knobs):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 < self.ad_share < 1.0:
            raise ValueError(f"ad_share must be in (0, 1) (both ads and organic items), got {self.ad_share}")
        if self.legacy_blind > self.latent_dim:
            raise ValueError(f"legacy_blind must be <= latent_dim = {self.latent_dim}, got {self.legacy_blind}")


LogT = TypeVar("LogT", "ClickLog", "DomainLog")


@dataclass(frozen=True)
class Population:
    """What is drawn once per world: latent vectors, biases, side features, popularity."""

    user_vec: np.ndarray  # (U, k) a_u
    item_vec: np.ndarray  # (I, k) b_i
    user_bias: np.ndarray  # (U,) β_u
    item_bias: np.ndarray  # (I,) β_i
    user_segment: np.ndarray  # (U,) seg(u)
    item_category: np.ndarray  # (I,) cat(i)
    user_activity: np.ndarray  # (U,) probability that a context belongs to u (Zipf)
    item_popularity: np.ndarray  # (I,) base exposure probability of i (Zipf)
    item_promotion: np.ndarray  # (I,) π_i, how strongly i is pushed on high-intent pages


@dataclass(frozen=True)
class ClickLog:
    """A click log as plain arrays, one entry per impression, sorted by context.

    `fields` maps each categorical input a model may see to its integer codes and `cardinality`
    to its number of values. `context` ids are the contexts' indices in the world; `shift` (s_z)
    and `p_true` are the ground truth, for the oracle and for analysis only.
    """

    user: np.ndarray  # (N,) user id
    item: np.ndarray  # (N,) item id
    context: np.ndarray  # (N,) context (session) id, non-decreasing
    y: np.ndarray  # (N,) click label 0/1
    p_true: np.ndarray  # (N,) σ(true logit), the oracle's probability
    shift: np.ndarray  # (N,) s_z of the impression's context (never a model input)
    fields: dict[str, np.ndarray] = field(default_factory=dict)  # model inputs by field name
    cardinality: dict[str, int] = field(default_factory=dict)  # number of values per field

    def __len__(self) -> int:
        return int(self.y.size)

    def subset(self, mask: np.ndarray) -> ClickLog:
        """The impressions selected by `mask` (a boolean mask or an index array over impressions)."""
        return ClickLog(
            user=self.user[mask],
            item=self.item[mask],
            context=self.context[mask],
            y=self.y[mask],
            p_true=self.p_true[mask],
            shift=self.shift[mask],
            fields={name: codes[mask] for name, codes in self.fields.items()},
            cardinality=dict(self.cardinality),
        )


def zipf_weights(n: int, exponent: float, generator: np.random.Generator) -> np.ndarray:
    """Probabilities ∝ rank^(−exponent) over n entities, ranks assigned in a random order."""
    ranks = generator.permutation(n) + 1
    weights = ranks.astype(np.float64) ** (-exponent)
    return weights / weights.sum()


def grouped_vectors(n: int, groups: int, dim: int, side_info: float, generator: np.random.Generator):
    """Latent vectors that lean towards their group's centre: v = √ρ·centre + √(1−ρ)·noise."""
    membership = generator.integers(0, groups, size=n)
    centres = generator.standard_normal((groups, dim))
    noise = generator.standard_normal((n, dim))
    vectors = np.sqrt(side_info) * centres[membership] + np.sqrt(1.0 - side_info) * noise
    return vectors, membership


def sample_population(config: WorldConfig, generator: np.random.Generator) -> Population:
    """Draw the users and items of the world (see the module docstring for the equations)."""
    user_vec, user_segment = grouped_vectors(
        config.n_users, config.n_user_segments, config.latent_dim, config.side_info, generator
    )
    item_vec, item_category = grouped_vectors(
        config.n_items, config.n_item_categories, config.latent_dim, config.side_info, generator
    )
    return Population(
        user_vec=user_vec,
        item_vec=item_vec,
        user_bias=config.user_bias_std * generator.standard_normal(config.n_users),
        item_bias=config.item_bias_std * generator.standard_normal(config.n_items),
        user_segment=user_segment,
        item_category=item_category,
        user_activity=zipf_weights(config.n_users, config.user_zipf, generator),
        item_popularity=zipf_weights(config.n_items, config.item_zipf, generator),
        item_promotion=generator.standard_normal(config.n_items),
    )


def sample_contexts(config: WorldConfig, population: Population, generator: np.random.Generator):
    """Who sees what where: per impression (user, item, context id), and the shift s_z per context.

    Each context z draws its owner u ∝ activity, its shift s_z ~ N(0, σ_z²), its size n_z, and
    n_z distinct items with probability ∝ popularity_i · exp(γ · e_z · π_i), the page signal e_z = s_z
    unless `exposure_follows_shift` < 1.
    """
    n_ctx = config.n_contexts
    owners = generator.choice(config.n_users, size=n_ctx, p=population.user_activity)
    shifts = config.context_shift_std * generator.standard_normal(n_ctx)
    low, high = max(2, config.session_size // 2), config.session_size + config.session_size // 2
    sizes = np.minimum(generator.integers(low, high + 1, size=n_ctx), config.n_items)
    signal = shifts
    if config.exposure_follows_shift < 1.0:
        # e_z = ρ_e · s_z + √(1 − ρ_e²) · σ_z · n_z: a page signal as spread as s_z, correlated ρ_e with it
        rho = config.exposure_follows_shift
        noise = config.context_shift_std * generator.standard_normal(n_ctx)
        signal = rho * shifts + np.sqrt(1.0 - rho**2) * noise
    # exposure ∝ popularity_i · exp(γ · e_z · π_i): log-weights per (context, item)
    scores = np.log(population.item_popularity)[None, :] + config.exposure_confounding * np.outer(
        signal, population.item_promotion
    )
    # Gumbel top-n: the n_z largest of log-weight + Gumbel noise are n_z distinct weighted draws
    gumbel = -np.log(-np.log(generator.random(scores.shape)))
    ranked = np.argsort(-(scores + gumbel), axis=1)[:, : sizes.max()]
    keep = np.arange(ranked.shape[1])[None, :] < sizes[:, None]
    contexts = np.repeat(np.arange(n_ctx), sizes)
    return owners[contexts], ranked[keep], contexts, shifts


def true_logit(config: WorldConfig, population: Population, user, item, shift) -> np.ndarray:
    """The ground-truth click logit: β₀ + β_u + β_i + κ·a_u·b_i/√k + s_z."""
    # a_u · b_i / √k, the low-rank user-item affinity
    affinity = np.sum(population.user_vec[user] * population.item_vec[item], axis=1) / np.sqrt(config.latent_dim)
    # β₀ + β_u + β_i + κ · affinity + s_z
    return (
        config.base_logit
        + population.user_bias[user]
        + population.item_bias[item]
        + config.affinity_scale * affinity
        + shift
    )


def make_log(config: WorldConfig | None = None, *, seed: int = 0) -> ClickLog:
    """Draw a whole click log from the world: population, contexts, then clicks. Same seed, same log."""
    config = config or WorldConfig()
    if not isinstance(config, WorldConfig):
        raise TypeError(f"config must be a WorldConfig, got {type(config).__name__}")
    if config.n_domains != 1:
        raise ValueError(f"n_domains must be 1 for make_log, got {config.n_domains}; use make_domain_log")
    generator = rng(seed)
    population = sample_population(config, generator)
    user, item, context, shifts = sample_contexts(config, population, generator)
    p_true = 1.0 / (1.0 + np.exp(-true_logit(config, population, user, item, shifts[context])))
    y = (generator.random(p_true.size) < p_true).astype(np.int64)
    return ClickLog(
        user=user,
        item=item,
        context=context,
        y=y,
        p_true=p_true,
        shift=shifts[context],
        fields={
            "user": user,
            "item": item,
            "user_segment": population.user_segment[user],
            "item_category": population.item_category[item],
        },
        cardinality={
            "user": config.n_users,
            "item": config.n_items,
            "user_segment": config.n_user_segments,
            "item_category": config.n_item_categories,
        },
    )


def split_by_context(log: LogT, test_fraction: float = 0.2, *, seed: int = 0) -> tuple[LogT, LogT]:
    """Split a log (a ClickLog or a DomainLog) into train and test by whole contexts: no context on both sides."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    contexts = np.unique(log.context)
    generator = rng(seed)
    test_contexts = generator.choice(contexts, size=max(1, round(test_fraction * contexts.size)), replace=False)
    in_test = np.isin(log.context, test_contexts)
    return log.subset(~in_test), log.subset(in_test)


def context_batches(log: ClickLog, contexts_per_batch: int, *, seed: int) -> Iterator[np.ndarray]:
    """Shuffle the contexts and yield impression indices, `contexts_per_batch` whole contexts at a time.

    A within-context loss needs every impression of a context in the same batch: shuffling
    impressions would quietly turn the within-context term into a global one. The log is sorted by
    context, so each context is one contiguous run of rows; a batch is the union of whole runs,
    which the assertion below checks.
    """
    if contexts_per_batch < 1:
        raise ValueError(f"contexts_per_batch must be >= 1, got {contexts_per_batch}")
    if np.any(np.diff(log.context) < 0):
        raise ValueError("log.context must be sorted (non-decreasing): contexts are contiguous runs of rows")
    starts = np.flatnonzero(np.r_[True, log.context[1:] != log.context[:-1]])
    ends = np.r_[starts[1:], log.context.size]
    order = rng(seed).permutation(starts.size)
    for first in range(0, order.size, contexts_per_batch):
        runs = order[first : first + contexts_per_batch]
        index = np.concatenate([np.arange(starts[r], ends[r]) for r in runs])
        # whole contexts only: each context id in the batch appears in no other run of the log
        assert np.unique(log.context[index]).size == runs.size
        yield index


def user_activity_bucket(train: ClickLog, test: ClickLog, edges: tuple[int, ...] = (2, 10)) -> np.ndarray:
    """For each test impression, the activity bucket of its user by training contexts owned.

    Bucket 0: at most edges[0] training contexts (sparse, long-tail users); bucket j: more than
    edges[j−1] and at most edges[j]; the last bucket: more than edges[−1] (heavy users).
    """
    first_rows = np.r_[True, train.context[1:] != train.context[:-1]]
    contexts_owned = np.bincount(train.user[first_rows], minlength=int(max(train.user.max(), test.user.max())) + 1)
    return np.searchsorted(np.asarray(edges), contexts_owned[test.user], side="left")


def reference_arrays() -> dict[str, np.ndarray]:
    """The default world's click log at seed 0, as the integer arrays its data card fingerprints.

    Only integer arrays (who saw what, where, and the clicks) enter the fingerprint: they are
    what the chapters train on, and unlike floats they do not depend on the last bit of `exp`.
    """
    log = make_log(WorldConfig(), seed=0)
    return {"user": log.user, "item": log.item, "context": log.context, "y": log.y}


# ---------------------------------------------------------------------------------------------
# Several domains: one platform, M scenarios over the same users and items (the STAR chapter)
# ---------------------------------------------------------------------------------------------

# The multi-domain world the STAR chapter uses and whose data card fingerprints it: 6 domains
# whose sizes run from about 49 % of the contexts down to about 5 %, shifted and rescaled
# features, and a domain-specific part of the click signal of weight ρ = 0.6 against the shared
# one (about a quarter of its variance). 12,000 contexts: half for training, half for a test set
# large enough to measure the small domains' AUC precisely.
MULTI_DOMAIN = WorldConfig(
    n_users=4000,
    n_items=300,
    n_contexts=12000,
    latent_dim=6,
    context_shift_std=0.0,
    exposure_confounding=0.0,
    base_logit=-2.0,
    affinity_scale=2.5,
    n_domains=6,
    domain_zipf=1.3,
    domain_strength=0.6,
    domain_bias_std=0.5,
    domain_feature_shift=1.0,
    domain_feature_scale=0.6,
)


@dataclass(frozen=True)
class DomainLog:
    """A multi-domain click log as plain arrays, one entry per impression, sorted by context.

    `X` are the dense features a model sees (the domain's view x = μ_d + s_d ⊙ x̃), `domain` the
    domain indicator. `latent` (x̃), `p_true` and the world's own domain parameters are the
    ground truth, for the oracle and for analysis only.
    """

    X: np.ndarray  # (N, 2k) observed features x
    domain: np.ndarray  # (N,) domain id d in 0..M−1
    y: np.ndarray  # (N,) click label 0/1
    p_true: np.ndarray  # (N,) σ(true logit)
    user: np.ndarray  # (N,) user id
    item: np.ndarray  # (N,) item id
    context: np.ndarray  # (N,) context id, non-decreasing; a context lies in one domain
    latent: np.ndarray  # (N, 2k) x̃ = [a_u, b_i], never a model input
    n_domains: int = 1  # M

    def __len__(self) -> int:
        return int(self.y.size)

    def subset(self, mask: np.ndarray) -> DomainLog:
        """The impressions selected by `mask` (a boolean mask or an index array over impressions)."""
        return DomainLog(
            X=self.X[mask],
            domain=self.domain[mask],
            y=self.y[mask],
            p_true=self.p_true[mask],
            user=self.user[mask],
            item=self.item[mask],
            context=self.context[mask],
            latent=self.latent[mask],
            n_domains=self.n_domains,
        )


@dataclass(frozen=True)
class RandomNetwork:
    """A random one-hidden-layer network r(x) = c · (v · tanh(W x + a) − m), centred and scaled so
    that r has mean 0 and variance 1 over x ~ N(0, I). It stands for an unknown click function."""

    W: np.ndarray  # (H, n) input weights, N(0, 1/n)
    a: np.ndarray  # (H,) hidden offsets, N(0, 0.5²)
    v: np.ndarray  # (H,) output weights, N(0, 1)
    c: float  # the scale that gives unit variance
    m: float  # the mean that gives zero mean

    def __call__(self, x: np.ndarray) -> np.ndarray:
        # r(x) = c · (v · tanh(W x + a) − m)
        return self.c * (np.tanh(x @ self.W.T + self.a) @ self.v - self.m)


def random_network(n_inputs: int, hidden: int, generator: np.random.Generator) -> RandomNetwork:
    """Draw a RandomNetwork on n_inputs features, its mean and scale measured on 4,096 normal inputs."""
    W = generator.standard_normal((hidden, n_inputs)) / np.sqrt(n_inputs)
    a = 0.5 * generator.standard_normal(hidden)
    v = generator.standard_normal(hidden)
    probe = generator.standard_normal((4096, n_inputs))
    raw = np.tanh(probe @ W.T + a) @ v
    return RandomNetwork(W=W, a=a, v=v, c=float(1.0 / raw.std()), m=float(raw.mean()))


@dataclass(frozen=True)
class DomainWorld:
    """What is drawn once per multi-domain world besides the population (see the module docstring)."""

    share: np.ndarray  # (M,) probability that a context falls in domain d, ∝ (d + 1)^(−a_D)
    feature_shift: np.ndarray  # (M, 2k) μ_d
    feature_scale: np.ndarray  # (M, 2k) s_d
    bias: np.ndarray  # (M,) b_d
    shared: RandomNetwork  # f
    own: list[RandomNetwork]  # g_d, one per domain


def sample_domains(config: WorldConfig, generator: np.random.Generator) -> DomainWorld:
    """Draw the domains: long-tail shares, feature shift and scale, click bias, and the random f, g_d."""
    m, n_features = config.n_domains, 2 * config.latent_dim
    share = np.arange(1, m + 1, dtype=np.float64) ** (-config.domain_zipf)
    return DomainWorld(
        share=share / share.sum(),
        feature_shift=config.domain_feature_shift * generator.standard_normal((m, n_features)),
        feature_scale=np.exp(config.domain_feature_scale * generator.standard_normal((m, n_features))),
        bias=config.domain_bias_std * generator.standard_normal(m),
        shared=random_network(n_features, config.domain_hidden, generator),
        own=[random_network(n_features, config.domain_hidden, generator) for _ in range(m)],
    )


def domain_logit(config: WorldConfig, world: DomainWorld, latent: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """The multi-domain click logit: β₀ + b_d + κ · (f(x̃) + ρ · g_d(x̃)) / √(1 + ρ²)."""
    rho = config.domain_strength
    own = np.zeros(latent.shape[0])
    for d, g in enumerate(world.own):
        rows = domain == d
        # g_d(x̃) on the impressions of domain d
        own[rows] = g(latent[rows])
    # β₀ + b_d + κ · (f(x̃) + ρ · g_d(x̃)) / √(1 + ρ²)
    signal = (world.shared(latent) + rho * own) / np.sqrt(1.0 + rho**2)
    return config.base_logit + world.bias[domain] + config.affinity_scale * signal


def make_domain_log(config: WorldConfig | None = None, *, seed: int = 0) -> tuple[DomainLog, DomainWorld]:
    """Draw a multi-domain click log (default: `MULTI_DOMAIN`) and the domains behind it. Same seed, same log.

    The population and the contexts come from the single-domain world's own pieces
    (`sample_population`, `sample_contexts`); each context then falls in one domain, the model's
    features are the domain's view of [a_u, b_i], and clicks follow `domain_logit`.
    """
    config = MULTI_DOMAIN if config is None else config
    if not isinstance(config, WorldConfig):
        raise TypeError(f"config must be a WorldConfig, got {type(config).__name__}")
    if config.n_domains < 2:
        raise ValueError(f"n_domains must be >= 2 for a multi-domain log, got {config.n_domains}")
    generator = rng(seed)
    population = sample_population(config, generator)
    user, item, context, _ = sample_contexts(config, population, generator)
    world = sample_domains(config, generator)
    # each context (a page view) happens in one domain, drawn by the long-tail shares
    domain = generator.choice(config.n_domains, size=config.n_contexts, p=world.share)[context]
    # x̃ = [a_u, b_i]; the model sees x = μ_d + s_d ⊙ x̃
    latent = np.concatenate([population.user_vec[user], population.item_vec[item]], axis=1)
    X = world.feature_shift[domain] + world.feature_scale[domain] * latent
    p_true = 1.0 / (1.0 + np.exp(-domain_logit(config, world, latent, domain)))
    y = (generator.random(p_true.size) < p_true).astype(np.int64)
    log = DomainLog(
        X=X,
        domain=domain,
        y=y,
        p_true=p_true,
        user=user,
        item=item,
        context=context,
        latent=latent,
        n_domains=config.n_domains,
    )
    return log, world


def domain_reference_arrays() -> dict[str, np.ndarray]:
    """The MULTI_DOMAIN log at seed 0, as the integer arrays its data card fingerprints."""
    log, _ = make_domain_log(MULTI_DOMAIN, seed=0)
    return {"user": log.user, "item": log.item, "context": log.context, "domain": log.domain, "y": log.y}


# ---------------------------------------------------------------------------------------------
# Ads and organic items: one feed, two exposure policies, one click model (the Rec4Ad chapter)
# ---------------------------------------------------------------------------------------------

# The mixed-feed world the Rec4Ad chapter uses and whose data card fingerprints it: 200 items,
# half of them ads; 3,000 ad requests and 3 × 3,000 recommendation requests, each showing one
# item chosen from 20 candidates; a legacy ad ranker blind to half of the item features, bids
# that follow one item feature, exposure bias τ = 4 for the ads and 1 for the recommendations.
AD_WORLD = WorldConfig(
    n_users=2000,
    n_items=200,
    n_contexts=3000,
    latent_dim=4,
    base_logit=-1.5,
    affinity_scale=2.0,
    context_shift_std=0.0,
    exposure_confounding=0.0,
    ad_share=0.5,
    ad_penalty=0.5,
    exposure_bias=4.0,
    rec_exposure_bias=1.0,
    ad_candidates=20,
    rec_traffic=3.0,
    bid_correlation=1.5,
    bid_noise=0.3,
    legacy_blind=2,
)


@dataclass(frozen=True)
class AdWorld:
    """What is drawn once per mixed-feed world: the population, which items are ads, bids, rankers."""

    population: Population  # users and items (sample_population)
    ads: np.ndarray  # (I_ad,) item ids of the ads
    organic: np.ndarray  # (I_rec,) item ids of the organic items
    is_ad: np.ndarray  # (I,) 1 for an ad, 0 for an organic item
    bid: np.ndarray  # (I,) the advertiser's bid per click (1 for organic items, never used)
    click: RandomNetwork  # f: the shared click function of x̃ = [a_u, b_i]
    rec_taste: RandomNetwork  # g: what the recommendation ranker optimises besides clicks


@dataclass(frozen=True)
class AdLog:
    """A mixed-feed log, one impression per request: features, domain, label, and the exposure.

    `propensity` is the probability that the serving policy showed this item among its
    `ad_candidates` candidates (the softmax of its score), the known propensity of IPS;
    a uniform policy has 1/m. `p_true` is the oracle's click probability, for analysis only.
    """

    X: np.ndarray  # (N, 2k) features x = [a_u, b_i] a model sees
    is_ad: np.ndarray  # (N,) 1: an ad impression, 0: a recommendation (the domain indicator)
    y: np.ndarray  # (N,) click label 0/1
    p_true: np.ndarray  # (N,) σ(true logit)
    bid: np.ndarray  # (N,) the bid of the item shown (1 for organic items)
    propensity: np.ndarray  # (N,) P(policy shows this item | request's candidates)
    user: np.ndarray  # (N,) user id
    item: np.ndarray  # (N,) item id
    n_candidates: int = 1  # m, so that a uniform policy has propensity 1/m

    def __len__(self) -> int:
        return int(self.y.size)

    def subset(self, mask: np.ndarray) -> AdLog:
        """The impressions selected by `mask` (a boolean mask or an index array over impressions)."""
        return AdLog(
            X=self.X[mask],
            is_ad=self.is_ad[mask],
            y=self.y[mask],
            p_true=self.p_true[mask],
            bid=self.bid[mask],
            propensity=self.propensity[mask],
            user=self.user[mask],
            item=self.item[mask],
            n_candidates=self.n_candidates,
        )


def sample_ad_world(config: WorldConfig, generator: np.random.Generator) -> AdWorld:
    """Draw the population, split the items into ads and organic items, draw bids and the two networks."""
    population = sample_population(config, generator)
    order = generator.permutation(config.n_items)
    n_ads = min(config.n_items - 1, max(1, round(config.ad_share * config.n_items)))
    is_ad = np.zeros(config.n_items, dtype=np.int64)
    is_ad[order[:n_ads]] = 1
    # log bid_i = ζ · b_i[0] + σ_bid · noise: advertisers of some kinds of items bid more
    log_bid = config.bid_correlation * population.item_vec[:, 0] + config.bid_noise * generator.standard_normal(
        config.n_items
    )
    bid = np.where(is_ad == 1, np.exp(log_bid), 1.0)
    n_features = 2 * config.latent_dim
    return AdWorld(
        population=population,
        ads=np.sort(order[:n_ads]),
        organic=np.sort(order[n_ads:]),
        is_ad=is_ad,
        bid=bid,
        click=random_network(n_features, config.domain_hidden, generator),
        rec_taste=random_network(n_features, config.domain_hidden, generator),
    )


def ad_features(world: AdWorld, user: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The features a model sees: x = [a_u, b_i] (any shape of ids; features on the last axis)."""
    return np.concatenate([world.population.user_vec[user], world.population.item_vec[item]], axis=-1)


def ad_logit(config: WorldConfig, world: AdWorld, user: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The one click model of the feed: β₀ + κ · f([a_u, b_i]) − δ · is_ad(i)."""
    x = ad_features(world, user, item)
    # β₀ + κ · f(x̃) − δ · is_ad: the same user decision for ads and organic items, less an ad penalty
    return config.base_logit + config.affinity_scale * world.click(x) - config.ad_penalty * world.is_ad[item]


def legacy_ad_score(config: WorldConfig, world: AdWorld, user: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The legacy ad ranker's log eCPM: log[σ(pCTR logit on x with its blind features zeroed) · bid_i].

    Its pCTR is the true click function read through a mask: the last `legacy_blind` item
    features are set to 0, so what it ignores never steers which ads are shown.
    """
    x = ad_features(world, user, item)
    if config.legacy_blind:
        x[..., x.shape[-1] - config.legacy_blind :] = 0.0
    logit = config.base_logit + config.affinity_scale * world.click(x) - config.ad_penalty
    # log eCPM = log pCTR + log bid
    return -np.logaddexp(0.0, -logit) + np.log(world.bid[item])


def rec_score(config: WorldConfig, world: AdWorld, user: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The recommendation ranker's score: κ · (f(x) + g(x)) / √2, clicks and its own objective g."""
    x = ad_features(world, user, item)
    return config.affinity_scale * (world.click(x) + world.rec_taste(x)) / np.sqrt(2.0)


def expose(scores: np.ndarray, bias: float, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pick one candidate per request (row) with probability softmax(τ · score); return (column, propensity).

    τ = `bias` = 0 is the uniform policy (propensity 1/m); a large τ is the greedy ranker.
    """
    # π(j | request) = exp(τ s_j) / Σ_j' exp(τ s_j')
    logits = bias * scores
    logits = logits - logits.max(axis=1, keepdims=True)
    prob = np.exp(logits)
    prob /= prob.sum(axis=1, keepdims=True)
    # inverse-CDF draw, one per row
    chosen = (prob.cumsum(axis=1) < generator.random((scores.shape[0], 1))).sum(axis=1)
    chosen = np.minimum(chosen, scores.shape[1] - 1)
    return chosen, prob[np.arange(scores.shape[0]), chosen]


def candidate_requests(
    config: WorldConfig, world: AdWorld, n: int, generator: np.random.Generator, *, organic: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """n requests: a user each (∝ activity) and m distinct candidate ads (or organic items), uniformly."""
    pool = world.organic if organic else world.ads
    users = generator.choice(config.n_users, size=n, p=world.population.user_activity)
    m = min(config.ad_candidates, pool.size)
    # m distinct candidates per request: the first m of a random permutation of the pool
    picks = np.argsort(generator.random((n, pool.size)), axis=1)[:, :m]
    return np.repeat(users[:, None], m, axis=1), pool[picks]


def _serve(config: WorldConfig, world: AdWorld, n: int, generator: np.random.Generator, *, policy: str) -> AdLog:
    """n requests served by one policy ('legacy' ads, 'rec' organic items, 'uniform' ads), with clicks."""
    users, items = candidate_requests(config, world, n, generator, organic=policy == "rec")
    if policy == "legacy":
        scores = legacy_ad_score(config, world, users, items)
    elif policy == "rec":
        scores = rec_score(config, world, users, items)
    else:
        scores = np.zeros(users.shape)
    bias = {"legacy": config.exposure_bias, "rec": config.rec_exposure_bias, "uniform": 0.0}[policy]
    column, propensity = expose(scores, bias, generator)
    rows = np.arange(n)
    user, item = users[rows, column], items[rows, column]
    p_true = 1.0 / (1.0 + np.exp(-ad_logit(config, world, user, item)))
    y = (generator.random(n) < p_true).astype(np.int64)
    return AdLog(
        X=ad_features(world, user, item),
        is_ad=world.is_ad[item],
        y=y,
        p_true=p_true,
        bid=world.bid[item],
        propensity=propensity,
        user=user,
        item=item,
        n_candidates=items.shape[1],
    )


def make_ad_log(config: WorldConfig | None = None, *, seed: int = 0) -> tuple[AdLog, AdLog, AdWorld]:
    """Draw a mixed feed (default: `AD_WORLD`): the training log, an unbiased ad test log, and the world.

    The training log holds `n_contexts` ad requests served by the legacy eCPM ranker and
    `rec_traffic · n_contexts` recommendation requests served by the recommendation ranker. The
    test log holds `n_contexts` requests whose ad is drawn uniformly from its candidates:
    exposed independently of every model. Same seed, same logs.
    """
    config = AD_WORLD if config is None else config
    if not isinstance(config, WorldConfig):
        raise TypeError(f"config must be a WorldConfig, got {type(config).__name__}")
    generator = rng(seed)
    world = sample_ad_world(config, generator)
    ads = _serve(config, world, config.n_contexts, generator, policy="legacy")
    recs = _serve(config, world, round(config.rec_traffic * config.n_contexts), generator, policy="rec")
    test = _serve(config, world, config.n_contexts, generator, policy="uniform")
    train = AdLog(
        *(np.concatenate([getattr(ads, f.name), getattr(recs, f.name)]) for f in fields(AdLog)[:-1]),
        n_candidates=ads.n_candidates,
    )
    return train, test, world


def ad_reference_arrays() -> dict[str, np.ndarray]:
    """The AD_WORLD logs at seed 0, as the integer arrays its data card fingerprints."""
    train, test, _ = make_ad_log(AD_WORLD, seed=0)
    return {
        "user": train.user,
        "item": train.item,
        "is_ad": train.is_ad,
        "y": train.y,
        "test_user": test.user,
        "test_item": test.item,
        "test_y": test.y,
    }


# ---------------------------------------------------------------------------------------------
# Many feature fields: F multi-hot categorical fields with Zipf-skewed ids (the PICASSO chapter)
# ---------------------------------------------------------------------------------------------


def zipf_probabilities(n_rows: int, exponent: float) -> np.ndarray:
    """The finite, normalized Zipf law over ranks 1..V: P(r) = r^(−s) / Σ_{j=1..V} j^(−s).

    Exponent s = 0 is uniform; the larger s, the more of the mass the first ranks hold.
    """
    if n_rows < 1:
        raise ValueError(f"n_rows must be >= 1, got {n_rows}")
    if exponent < 0:
        raise ValueError(f"exponent must be >= 0, got {exponent}")
    weights = np.arange(1, n_rows + 1, dtype=np.float64) ** (-exponent)
    return weights / weights.sum()


def zipf_stream(n_rows: int, exponent: float, size: int, generator: np.random.Generator) -> np.ndarray:
    """`size` ids in 0..V−1 drawn from the finite Zipf law, the rank of each row a random permutation.

    Returns int64 ids; id `order[r − 1]` has rank r, so the hottest row is not row 0.
    """
    order = generator.permutation(n_rows)
    ranks = generator.choice(n_rows, size=size, p=zipf_probabilities(n_rows, exponent))
    return order[ranks].astype(np.int64)


@dataclass(frozen=True)
class FieldLog:
    """A click log of F multi-hot categorical fields: ids[n, f, l] is the l-th id of field f in record n.

    `p_true` is the ground truth (for the oracle only); every field has `n_rows` rows.
    """

    ids: np.ndarray  # (N, F, L) int64 row ids, each in 0..n_rows−1
    y: np.ndarray  # (N,) click label 0/1
    p_true: np.ndarray  # (N,) σ(true logit)
    n_rows: int  # V: rows per field

    def __len__(self) -> int:
        return int(self.y.size)

    def subset(self, mask: np.ndarray) -> FieldLog:
        """The records selected by `mask` (a boolean mask, an index array or a slice)."""
        return FieldLog(ids=self.ids[mask], y=self.y[mask], p_true=self.p_true[mask], n_rows=self.n_rows)


def make_field_log(
    n_records: int,
    n_fields: int,
    *,
    n_rows: int = 1000,
    ids_per_field: int = 4,
    zipf: float = 1.1,
    base_logit: float = -1.5,
    signal: float = 1.5,
    seed: int = 0,
) -> FieldLog:
    """Draw a click log of `n_fields` multi-hot fields (see "Many feature fields" above). Same seed, same log.

    Each field has `n_rows` rows with Zipf(`zipf`) popularity; a record holds `ids_per_field` ids
    of every field; logit = β₀ + κ · (1/√F) Σ_f mean_l w_f[id] with β₀ = `base_logit`, κ = `signal`.
    """
    for name, value in (("n_records", n_records), ("n_fields", n_fields), ("n_rows", n_rows)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not isinstance(ids_per_field, int) or ids_per_field < 1:
        raise ValueError(f"ids_per_field must be an int >= 1, got {ids_per_field!r}")
    if zipf < 0:
        raise ValueError(f"zipf must be >= 0, got {zipf}")
    generator = rng(seed)
    size = n_records * ids_per_field
    ids = np.stack([zipf_stream(n_rows, zipf, size, generator) for _ in range(n_fields)], axis=1)
    ids = ids.reshape(n_records, ids_per_field, n_fields).transpose(0, 2, 1).copy()
    effect = generator.standard_normal((n_fields, n_rows))
    # (1/√F) Σ_f (1/L) Σ_l w_f[id_{f,l}]
    pooled = effect[np.arange(n_fields)[None, :, None], ids].mean(axis=2).sum(axis=1) / np.sqrt(n_fields)
    p_true = 1.0 / (1.0 + np.exp(-(base_logit + signal * pooled)))
    y = (generator.random(n_records) < p_true).astype(np.int64)
    return FieldLog(ids=ids, y=y, p_true=p_true, n_rows=n_rows)


def field_reference_arrays() -> dict[str, np.ndarray]:
    """The PICASSO chapter's default log (50 fields) at seed 0, as the integer arrays its data card fingerprints."""
    log = make_field_log(8192, 50, seed=0)
    return {"ids": log.ids, "y": log.y}
