"""The PICASSO experiment: the configuration, the run, the claims and the figures."""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go
import torch

from toyscale.core import device, plot
from toyscale.core.claims import Claim, Verdict, all_of, paired, within
from toyscale.core.seeding import rng, seed_everything
from toyscale.recsys.world import make_field_log, zipf_stream

from .caching import (
    lru_hits,
    static_hits,
    static_top_k,
    zipf_top_share,
)
from .interleaving import (
    Event,
    encode_records,
    train_pipeline,
)
from .packing import (
    WideAndDeep,
    packed_copy,
)
from .timing import (
    benchmark,
    training_steps,
)

# ---------------------------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """Toy defaults for the PICASSO experiment: three measurements, each against its baseline."""

    # Packing
    field_counts: tuple[int, ...] = (10, 50, 200)  # F: numbers of fields timed, per-field vs packed
    n_rows: int = 200  # V: rows per field's table
    ids_per_field: int = 4  # L: ids per field per record (multi-hot)
    embedding_dim: int = 8  # d: width of the deep embeddings
    hidden: int = 64  # width of the MLP's hidden layer
    step_batch_size: int = 128  # records per timed training step of the packing benchmark
    bench_steps: int = 4  # training steps per timed call
    repeats: int = 7  # timed calls per side, alternated ABBA
    lr: float = 0.01  # Adam learning rate, both sides
    # Interleaving
    batch_size: int = 512  # records per optimizer step of the pipelined model
    n_fields: int = 50  # F of the pipelined model
    n_records: int = 4096  # records in the click log, one pass of training
    micro_batches: int = 4  # micro-batches per batch, the unit of the pipeline
    queue_depth: int = 4  # capacity of the bounded queue between producer and trainer (micro-batches)
    hash_rounds: int = 3  # rounds of the splitmix64 finalizer in the producer's hash
    pipeline_repeats: int = 3  # timed passes per side (serial, interleaved), alternated
    zipf: float = 1.1  # s of the fields' id popularity in the click log
    # Caching
    cache_rows: int = 100_000  # V of the cached table
    stream_length: int = 100_000  # ids in the stream: the first half profiles / warms up, the second is measured
    skews: tuple[float, ...] = (0.6, 0.9, 1.2)  # Zipf exponents s of the id stream
    cache_fractions: tuple[float, ...] = (0.001, 0.003, 0.01, 0.03, 0.1)  # cache size / V
    headline_fraction: float = 0.01  # the cache size the claim is stated at (share of V)

    def __post_init__(self) -> None:
        for name in ("n_rows", "ids_per_field", "embedding_dim", "hidden", "step_batch_size", "bench_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in (
            "repeats",
            "batch_size",
            "n_fields",
            "micro_batches",
            "queue_depth",
            "hash_rounds",
            "pipeline_repeats",
            "cache_rows",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if len(self.field_counts) < 2 or any(f < 1 for f in self.field_counts):
            raise ValueError(f"field_counts needs at least two positive values, got {self.field_counts}")
        if list(self.field_counts) != sorted(self.field_counts):
            raise ValueError(f"field_counts must be increasing, got {self.field_counts}")
        if self.batch_size % self.micro_batches:
            raise ValueError(f"batch_size {self.batch_size} must be a multiple of micro_batches {self.micro_batches}")
        if self.n_records < 2 * self.batch_size:
            raise ValueError(f"n_records must be >= 2 · batch_size, got {self.n_records}")
        if len(self.skews) < 2 or list(self.skews) != sorted(self.skews) or self.skews[0] < 0:
            raise ValueError(f"skews must be at least two increasing values >= 0, got {self.skews}")
        if not all(0 < c <= 1 for c in self.cache_fractions) or self.headline_fraction not in self.cache_fractions:
            raise ValueError(
                f"cache_fractions must lie in (0, 1] and include headline_fraction {self.headline_fraction}, "
                f"got {self.cache_fractions}"
            )
        if self.stream_length < 2:
            raise ValueError(f"stream_length must be >= 2, got {self.stream_length}")

    @classmethod
    def fast(cls) -> Config:
        """Fewer fields, records and ids for tests: a couple of seconds per seed."""
        return cls(
            field_counts=(10, 100),
            repeats=5,
            n_records=2048,
            pipeline_repeats=3,
            cache_rows=20_000,
            stream_length=40_000,
            skews=(0.6, 1.2),
            cache_fractions=(0.003, 0.01, 0.05),
        )


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric]: per-field and packed ms per step at each F and the packed speed-up;
    serial, interleaved, producer-alone and trainer-alone ms per batch; hit rates of the static and
    LRU caches at the headline cache size per skew.
    step_seconds[arm]: per F, the timed calls' seconds per step; timeline[arm]: the pipeline's
    events; hit_rate[policy][skew]: one value per cache fraction.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    field_counts: list[int]
    step_seconds: dict[str, list[list[float]]]
    speedup: list[float]
    pipeline_seconds: dict[str, list[float]]
    timeline: dict[str, list[Event]]
    stage_seconds: dict[str, float]
    identical_models: bool
    cache_fractions: list[float]
    skews: list[float]
    hit_rate: dict[str, dict[float, list[float]]] = field(default_factory=dict)


def measure_packing(config: Config, seed: int, on: torch.device) -> tuple[dict[str, list[list[float]]], list[float]]:
    """For every F: seconds per training step of the per-field model and of the packed model (same weights)."""
    seconds: dict[str, list[list[float]]] = {"per_field": [], "packed": []}
    speedup = []
    for n_fields in config.field_counts:
        log = make_field_log(
            config.step_batch_size, n_fields, n_rows=config.n_rows, ids_per_field=config.ids_per_field, seed=seed
        )
        rows = torch.as_tensor(log.ids, device=on)
        y = torch.as_tensor(log.y, device=on)
        seed_everything(seed)
        baseline = WideAndDeep(
            [config.n_rows] * n_fields, dim=config.embedding_dim, hidden=config.hidden, packed=False
        ).to(on)
        packed = packed_copy(baseline)
        steps = config.bench_steps
        timing = benchmark(
            training_steps(baseline, rows, y, steps=steps, lr=config.lr),
            training_steps(packed, rows, y, steps=steps, lr=config.lr),
            repeats=config.repeats,
            on=on,
        )
        seconds["per_field"].append([t / steps for t in timing.a])
        seconds["packed"].append([t / steps for t in timing.b])
        speedup.append(timing.ratio)
    return seconds, speedup


def measure_pipeline(config: Config, seed: int, on: torch.device) -> dict[str, object]:
    """Train the packed model one pass serially and one interleaved, alternately; time and compare them."""
    log = make_field_log(
        config.n_records,
        config.n_fields,
        n_rows=config.n_rows,
        ids_per_field=config.ids_per_field,
        zipf=config.zipf,
        seed=seed,
    )
    n_train = config.n_records // config.batch_size * config.batch_size
    records = encode_records(log, seed=seed)
    seed_everything(seed)
    initial = WideAndDeep(
        [config.n_rows] * config.n_fields, dim=config.embedding_dim, hidden=config.hidden, packed=True
    ).to(on)
    train_records = records.head(n_train)
    kwargs = dict(
        batch_size=config.batch_size,
        micro_batches=config.micro_batches,
        lr=config.lr,
        queue_depth=config.queue_depth,
        hash_rounds=config.hash_rounds,
    )
    models: dict[str, WideAndDeep] = {}
    timelines: dict[str, list[Event]] = {}

    def one_pass(arm: str) -> Callable[[], None]:
        def go_() -> None:
            model = copy.deepcopy(initial)
            timelines[arm] = train_pipeline(
                model, train_records, log.y[:n_train], interleave=arm == "interleaved", **kwargs
            )
            models[arm] = model

        return go_

    timing = benchmark(one_pass("serial"), one_pass("interleaved"), repeats=config.pipeline_repeats, warmup=0, on=on)
    n_batches = n_train // config.batch_size
    serial_events = timelines["serial"]
    stage_seconds = {
        stage: sum(e.end - e.start for e in serial_events if e.stage == stage) / n_batches
        for stage in ("produce", "train")
    }
    identical = all(
        torch.equal(p, q)
        for p, q in zip(models["serial"].parameters(), models["interleaved"].parameters(), strict=True)
    )
    return {
        "seconds": {"serial": [t / n_batches for t in timing.a], "interleaved": [t / n_batches for t in timing.b]},
        "ratio": timing.ratio,
        "timeline": timelines,
        "stage_seconds": stage_seconds,
        "identical": identical,
    }


def measure_caching(config: Config, seed: int) -> dict[str, dict[float, list[float]]]:
    """Hit rates of static top-k and LRU caches per skew and cache fraction, on the second half of a stream."""
    generator = rng(seed)
    half = config.stream_length // 2
    rates: dict[str, dict[float, list[float]]] = {"static": {}, "lru": {}, "ideal": {}}
    for skew in config.skews:
        stream = zipf_stream(config.cache_rows, skew, config.stream_length, generator)
        profile, measured = stream[:half], stream[half:]
        for policy in rates:
            rates[policy][skew] = []
        for fraction in config.cache_fractions:
            capacity = max(1, round(fraction * config.cache_rows))
            hot = static_top_k(profile, config.cache_rows, capacity)
            rates["static"][skew].append(float(static_hits(measured, hot, config.cache_rows).mean()))
            # the LRU cache warms up on the first half and is measured on the second
            rates["lru"][skew].append(float(lru_hits(stream, capacity)[half:].mean()))
            rates["ideal"][skew].append(zipf_top_share(config.cache_rows, skew, capacity))
    return rates


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Measure packing, interleaving and caching, each against its baseline, on one seed."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a picasso.Config, got {type(config).__name__}")
    on = device()
    step_seconds, speedup = measure_packing(config, seed, on)
    pipeline = measure_pipeline(config, seed, on)
    hit_rate = measure_caching(config, seed)

    scores: dict[str, dict[str, float]] = {"per_field": {}, "packed": {}, "packed_speedup": {}}
    for i, n_fields in enumerate(config.field_counts):
        for arm in ("per_field", "packed"):
            scores[arm][f"ms_per_step_F{n_fields}"] = 1e3 * statistics.median(step_seconds[arm][i])
        scores["packed_speedup"][f"ratio_F{n_fields}"] = speedup[i]
    seconds = pipeline["seconds"]
    for arm in ("serial", "interleaved"):
        scores[arm] = {"ms_per_batch": 1e3 * statistics.median(seconds[arm])}
    scores["producer_alone"] = {"ms_per_batch": 1e3 * pipeline["stage_seconds"]["produce"]}
    scores["trainer_alone"] = {"ms_per_batch": 1e3 * pipeline["stage_seconds"]["train"]}
    scores["interleaved"]["speedup"] = pipeline["ratio"]
    at = config.cache_fractions.index(config.headline_fraction)
    for policy in ("static", "lru", "ideal"):
        scores[f"cache_{policy}"] = {f"hit_rate_s{s:g}": hit_rate[policy][s][at] for s in config.skews}
    return Result(
        config=config,
        seed=seed,
        metrics=scores,
        field_counts=list(config.field_counts),
        step_seconds=step_seconds,
        speedup=speedup,
        pipeline_seconds=seconds,
        timeline=pipeline["timeline"],
        stage_seconds=pipeline["stage_seconds"],
        identical_models=pipeline["identical"],
        cache_fractions=list(config.cache_fractions),
        skews=list(config.skews),
        hit_rate=hit_rate,
    )


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------

# Bounds, set from measured noise on the shared 2-core machine (load average about 5; median of
# 7 alternated calls): packed speed-up 1.2–1.5× at F = 10 and 2.2–3.0× at F = 200, with calls
# varying by ±20 % within a run. Hit rates vary by < 0.01 across seeds.
PACKING_MIN_SPEEDUP = 1.5  # packed must beat per-field by at least this factor at the largest F, every seed
PACKING_GROWTH_MARGIN = 0.3  # the speed-up at the largest F must exceed the smallest F's by this, on average
HIT_RATE_MIN = 0.5  # a cache of headline_fraction · V rows must serve at least this share at the largest skew
SKEW_MARGIN = 0.3  # the hit rate at the largest skew must exceed the smallest skew's by this
OVERLAP_MIN = 0.5  # interleaving must hide at least this share of the shorter stage's time


def _check_packing(results: Sequence[Result]) -> Verdict:
    largest, smallest = [r.speedup[-1] for r in results], [r.speedup[0] for r in results]
    f_max, f_min = results[0].field_counts[-1], results[0].field_counts[0]
    return all_of(
        within(largest, PACKING_MIN_SPEEDUP, float("inf"), name=f"packed speed-up at F = {f_max}"),
        paired(largest, smallest, margin=PACKING_GROWTH_MARGIN, name=f"speed-up at F = {f_max} − at F = {f_min}"),
    )


def hidden_fraction(result: Result) -> float:
    """How much of the shorter stage interleaving hides: (t_serial − t_interleaved) / min(t_produce, t_train)."""
    serial = statistics.median(result.pipeline_seconds["serial"])
    interleaved = statistics.median(result.pipeline_seconds["interleaved"])
    return (serial - interleaved) / min(result.stage_seconds.values())


def _check_overlap(results: Sequence[Result]) -> Verdict:
    return within(
        [hidden_fraction(r) for r in results], OVERLAP_MIN, float("inf"), name="share of the shorter stage hidden"
    )


def _check_identical(results: Sequence[Result]) -> Verdict:
    same = sum(r.identical_models for r in results)
    return Verdict(same == len(results), f"bit-identical trained models on {same}/{len(results)} seeds")


def _check_cache(results: Sequence[Result]) -> Verdict:
    config = results[0].config
    at = config.cache_fractions.index(config.headline_fraction)
    high = [r.hit_rate["static"][config.skews[-1]][at] for r in results]
    low = [r.hit_rate["static"][config.skews[0]][at] for r in results]
    share = f"{config.headline_fraction:.1%} of the rows"
    return all_of(
        within(high, HIT_RATE_MIN, 1.0, name=f"static hit rate, {share}, s = {config.skews[-1]:g}"),
        paired(
            high, low, margin=SKEW_MARGIN, name=f"hit rate at s = {config.skews[-1]:g} − at s = {config.skews[0]:g}"
        ),
    )


CLAIMS = [
    Claim(
        id="packing_speedup_grows_with_fields",
        kind="effect",
        statement="Packing tables with the same attributes into one lookup speeds up training, more so with "
        "more feature fields (up to 6× end to end on GPU; a prototype measured about 8× at 200 fields on CPU).",
        metric="median paired ratio of per-field over packed step time (forward, backward, Adam), alternated runs",
        check=_check_packing,
    ),
    Claim(
        id="interleaving_changes_no_number",
        kind="mechanism",
        statement="Interleaving is a schedule, not an approximation: the model trains to the same weights.",
        metric="trained parameters, serial vs interleaved pipeline, compared with torch.equal",
        check=_check_identical,
    ),
    Claim(
        id="interleaving_hides_the_shorter_stage",
        kind="effect",
        statement="Pipelining micro-batches brings the step time close to the slowest stage instead of the sum.",
        metric="(t_serial − t_interleaved) / min(t_produce, t_train), medians of alternated passes",
        check=_check_overlap,
        expected=False,
        reason=(
            "overlap needs a core free for the producer thread; on the 2 shared cores this book is tested on "
            "(load average about 5) two threads ran barely faster than one, so the interleaved pass took about "
            "as long as the serial one. On an idle multi-core machine the check can pass"
        ),
    ),
    Claim(
        id="small_cache_serves_most_lookups",
        kind="mechanism",
        statement="Ids are skewed, so a cache of hot embeddings serves most lookups; the less skew, the fewer hits.",
        metric="hit rate of a static top-k cache (profiled on the first half of the stream, measured on the second)",
        check=_check_cache,
    ),
    Claim(
        id="end_to_end_6x_on_gpu",
        kind="effect",
        statement="Up to 6× throughput over state-of-the-art baselines and an order of magnitude higher "
        "hardware utilization in production.",
        metric="none: GPU clusters and industrial models",
        check=None,
        expected=False,
        needs=(
            "GPU clusters and industrial models: on a CPU the ratios measure dispatch and memory overheads, "
            "not GPU kernels"
        ),
    ),
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------


def fig_packing(result: Result) -> go.Figure:
    """Median ms per training step against the number of fields, per-field bags vs one packed table."""
    colors = plot.colors(["packed", "per_field"], method="packed")
    fig = plot.figure(
        "One packed lookup instead of F: the gap grows with the number of fields",
        "number of feature fields F",
        "ms per training step (median)",
    )
    labels = {"per_field": "per-field bags (F lookups)", "packed": "packed table (one lookup)"}
    for arm in ("per_field", "packed"):
        medians = [1e3 * statistics.median(times) for times in result.step_seconds[arm]]
        fig.add_trace(
            go.Scatter(
                x=result.field_counts,
                y=medians,
                mode="lines+markers",
                name=labels[arm],
                line=dict(color=colors[arm]),
                hovertemplate="F = %{x}: %{y:.1f} ms<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(type="log")
    return fig


def fig_timeline(result: Result, n_micro: int = 8) -> go.Figure:
    """The first `n_micro` micro-batches of the serial and the interleaved pass, stage by stage."""
    colors = plot.colors(["train", "produce"], method="train")
    fig = plot.figure(
        "Serial: parse, then train. Interleaved: the parser runs ahead in its own thread",
        "time since the pass started (ms)",
        "",
        barmode="overlay",
    )
    names = {"produce": "parse and hash (producer)", "train": "forward, backward, Adam (trainer)"}
    for stage in ("produce", "train"):
        xs, bases, ys, text = [], [], [], []
        for arm in ("serial", "interleaved"):
            for event in result.timeline[arm]:
                if event.stage == stage and event.micro < n_micro:
                    bases.append(1e3 * event.start)
                    xs.append(1e3 * (event.end - event.start))
                    ys.append(f"{arm}: {'producer' if stage == 'produce' else 'trainer'}")
                    text.append(f"micro-batch {event.micro}")
        fig.add_trace(
            go.Bar(
                x=xs,
                base=bases,
                y=ys,
                orientation="h",
                name=names[stage],
                marker_color=colors[stage],
                text=text,
                hovertemplate="%{text}: %{base:.1f} to %{x:.1f} ms long<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=["interleaved: trainer", "interleaved: producer", "serial: trainer", "serial: producer"],
    )
    return fig


def fig_hit_rate(result: Result) -> go.Figure:
    """Hit rate against cache size (share of the table's rows) for each skew: static top-k, LRU, and the ideal."""
    fig = plot.figure(
        "A cache of a few % of the rows serves most lookups when ids are skewed",
        "cache size (share of the table's rows)",
        "hit rate",
    )
    shades = [plot.METHOD_COLOR, "#E8919C", "#F2C1C8"]
    for i, skew in enumerate(reversed(result.skews)):
        color = shades[i % len(shades)]
        for policy, dash, label in (("static", "solid", "static top-k"), ("lru", "dot", "LRU")):
            fig.add_trace(
                go.Scatter(
                    x=result.cache_fractions,
                    y=result.hit_rate[policy][skew],
                    mode="lines+markers",
                    name=f"{label}, s = {skew:g}",
                    line=dict(color=color if policy == "static" else plot.BASELINE_COLORS[i % 3], dash=dash),
                    hovertemplate="%{x:.1%} of rows: %{y:.3f}<extra>%{fullData.name}</extra>",
                )
            )
    fig.update_xaxes(type="log", tickformat=".1%")
    fig.update_yaxes(range=[0, 1])
    return fig
