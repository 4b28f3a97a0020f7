"""Fangorn: the executor's pieces, identical results across plans, the plug-ins, the replay, the claims."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

from toyscale.core.claims import check_results, unmet
from toyscale.systems import fangorn as f
from toyscale.systems.fangorn import graph as g
from toyscale.systems.fangorn.cluster import Cluster, CostModel, simulate, task_seconds

COSTS = CostModel({"map": 1e-8, "reduce": 4e-8, "build": 4e-8}, 1e-6, {"map": 0.0, "reduce": 0.0, "build": 0.0})


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as p:
        yield p


def test_aggregate_hand_computed():
    out = g.aggregate(np.array([3, 1, 3, 2]), np.array([10, 5, 1, 7]), np.ones(4, np.int64))
    assert out.tolist() == [[1, 5, 1], [2, 7, 1], [3, 11, 2]]


def test_partition_keeps_every_row_in_its_bucket():
    rng = np.random.default_rng(0)
    key = rng.integers(0, 1000, 5000)
    out = g.partition(key, key * 2, 64)
    assert out.offsets[-1] == 5000 and out.rows_per_bucket().sum() == 5000
    for b in range(64):
        assert np.all(g.bucket_of(out.key[out.offsets[b] : out.offsets[b + 1]], 64) == b)
    assert np.array_equal(out.value, out.key * 2)


def test_probe_joins_and_multiplies():
    side = g.build(np.array([5, 2]), np.array([3, 7]))
    k, v = g.probe(np.array([2, 9, 5, 2]), np.array([1, 1, 2, 3]), side)
    assert k.tolist() == [2, 5, 2] and v.tolist() == [7, 6, 21]


@pytest.mark.parametrize("name", g.WORKLOADS)
def test_every_plan_returns_the_same_table(name, pool):
    """Honest by construction: static, forced-branch and adaptive plans agree exactly with one node."""
    config = f.Config(n_rows=20_000, n_keys=2_000, costs=COSTS)
    w = g.make_workload(name, config.n_rows, config.n_keys, seed=3)
    ref = g.reference_result(w)
    assert len(ref) > 0
    for plan in f.policies(config, w):
        assert np.array_equal(g.execute(w, plan, config.knobs(), pool).result, ref), plan.name


def test_a_wrong_plan_is_caught(pool, monkeypatch):
    """The identity check can fail: drop the last bucket range and execute raises."""
    w = g.make_workload("uniform", 20_000, 2_000, seed=0)
    monkeypatch.setattr(g, "static_ranges", lambda b, p: [g.ReduceSpec(0, b - 1, ())])
    with pytest.raises(AssertionError, match="different result"):
        g.execute(w, f.Plan("broken"), g.Knobs(), pool)


def test_coalesce_and_split():
    knobs = g.Knobs(buckets=8, target_rows=100, skew_factor=4.0)
    per_map = np.array([[10, 10, 10, 10, 400, 10, 10, 10]] * 4)  # bucket 4 is hot (1,600 rows)
    rows = per_map.sum(axis=0)
    plain = g.adapt_parallelism(rows, per_map, knobs, split=False)
    split = g.adapt_parallelism(rows, per_map, knobs, split=True)
    # every bucket read exactly once (whole, or by disjoint map subsets that cover all maps)
    for specs in (plain, split):
        covered = {}
        for s in specs:
            for b in range(s.lo, s.hi):
                covered.setdefault(b, []).extend(s.maps or range(4))
        assert sorted(covered) == list(range(8)) and all(sorted(v) == list(range(4)) for v in covered.values())
    assert max(per_map[:, s.lo : s.hi].sum() for s in plain) >= 1600
    assert max(per_map[list(s.maps or range(4)), s.lo : s.hi].sum() for s in split) == 400


def test_join_plugin_uses_real_size_only_when_adaptive():
    w = g.make_workload("join, small side", 20_000, 2_000, seed=0)
    real = int(w.dim_flag.sum())
    knobs = g.Knobs(broadcast_rows=200)
    assert real <= 200 < w.estimated_dim_rows()
    assert g.choose_join(f.Plan("s"), w, real, knobs) == "shuffle"
    assert g.choose_join(f.Plan("a", adaptive_join=True), w, real, knobs) == "broadcast"


def test_replay_hand_computed():
    cl = Cluster(slots=32, warm_slots=4, start_s=1.0, schedule_s=0.0, rows_scale=1.0)
    costs = CostModel({"map": 1.0, "reduce": 1.0, "build": 1.0}, 0.0, {})
    stages = [g.Stage("m", [g.Task({"map": 2})] * 40), g.Stage("r", [g.Task({"reduce": 3})] * 2, ("m",), "bubble")]
    rep = simulate(stages, costs, cl)
    # two waves of (1 s start + 2 s) on 32 slots, then a warm bubble of 3 s
    assert rep.job_s == pytest.approx(2 * 3 + 3)
    assert rep.slot_s == pytest.approx(40 * 3 + 2 * 3)
    assert task_seconds({"map": 2, "reduce": 1}, costs, cl) == pytest.approx(3.0)


def test_run_is_deterministic_with_a_fixed_cost_model():
    config = replace(f.Config.fast(), costs=COSTS)
    a, b = f.run(config, seed=1), f.run(config, seed=1)
    assert a.metrics == b.metrics and a.oracle_plan == b.oracle_plan


def test_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        g.make_workload("nope", 100, 10, seed=0)
    with pytest.raises(ValueError, match="parallelisms"):
        f.Config(parallelisms=(0,))
    with pytest.raises(TypeError, match="config must be"):
        f.run("fast")
    with pytest.raises(ValueError, match="slots"):
        Cluster(slots=8)
    with pytest.raises(ValueError, match="reps"):
        f.calibrate(reps=1)


@pytest.fixture(scope="module")
def results():
    return [f.run(f.Config.fast(), seed=s) for s in range(5)]


def test_claims_hold_over_five_seeds(results):
    outcomes = check_results(f.CLAIMS, results, range(5), "fangorn")
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_adaptive_fails_the_claims(results):
    """Tests can fail: pretend adaptive never split the hot key (its time = the no-split ablation)."""
    broken = []
    for r in results:
        m = {a: dict(v) for a, v in r.metrics.items()}
        m["adaptive"]["job_s zipf hot key"] = m["adaptive, no skew split"]["job_s zipf hot key"]
        broken.append(replace(r, metrics=m))
    skew = next(c for c in f.CLAIMS if c.id == "skew_split")
    assert not skew.check(broken).passed


def test_figures(results):
    r = results[0]
    assert len(f.fig_graph(r).data) > 2
    assert len(f.fig_task_times(r).data) == 2
    assert len(f.fig_job_times(r).data) == len(r.config.parallelisms) + 2
    with pytest.raises(ValueError, match="metric"):
        f.fig_job_times(r, metric="x")
