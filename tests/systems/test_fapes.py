"""FaPES: the performance model, allocation, the replicas, the simulation's accounting, and the claims."""

import copy
import itertools

import numpy as np
import pytest
import simpy

from toyscale.core.claims import check_results, evaluate, unmet
from toyscale.systems import fapes as f

JOB = f.Job(0, 0.0, 2, 128, alpha=0.02, beta=0.003, gamma=0.04, delta=0.01, phi=512.0, work=1e6)


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


def test_step_time_by_hand():
    # one GPU: α + β·m = 0.02 + 0.003·128; four GPUs: α + β·m/4 + γ + 3δ
    assert f.step_time(JOB, 1, 128) == pytest.approx(0.02 + 0.384)
    assert f.step_time(JOB, 4, 128) == pytest.approx(0.02 + 0.096 + 0.04 + 0.03)
    with pytest.raises(ValueError, match="gpus"):
        f.step_time(JOB, 0, 128)


def test_statistical_efficiency_and_goodput():
    assert f.statistical_efficiency(512.0, 128, 128) == 1.0
    assert f.statistical_efficiency(512.0, 512, 128) == pytest.approx(640 / 1024)
    e = [f.statistical_efficiency(512.0, m, 128) for m in (128, 256, 512, 1024)]
    assert all(a > b for a, b in itertools.pairwise(e))
    # goodput = 60 · m / t · E(m)
    assert f.goodput_rate(JOB, 2, 256) == pytest.approx(
        60 * 256 / f.step_time(JOB, 2, 256) * f.statistical_efficiency(512.0, 256, 128)
    )


def test_batch_choices_respect_memory():
    assert JOB.batch_choices(1) == [128]
    assert JOB.batch_choices(4) == [128, 256, 512]
    assert JOB.batch_choices(16) == [128, 256, 512, 1024]


def test_performance_model_starts_at_the_prior_and_learns_from_observed_steps():
    model = f.PerformanceModel(128)
    prior_error = f.held_out_error(model, JOB, 16)
    for g, m in [(1, 128), (2, 128), (2, 256), (4, 256), (8, 512)]:
        model.observe(g, m, f.step_time(JOB, g, m), JOB.phi)
    assert model.configs == {(1, 128), (2, 128), (2, 256), (4, 256), (8, 512)}
    assert model.max_observed_gpus == 8
    fitted_error = f.held_out_error(model, JOB, 16)
    assert fitted_error < prior_error - 0.02
    assert model.params()["beta"] == pytest.approx(JOB.beta, rel=0.05)
    assert model.params()["phi"] == pytest.approx(512.0)


def test_allocate_by_hand():
    linear = [float(g) for g in range(1, 9)]  # perfect speed-up
    flat = [1.0, 1.05, 1.06, 1.07]  # no use for a second GPU
    # one GPU each in FIFO order, then every spare GPU where it helps
    assert f.allocate([linear, flat], 6, 0.1) == [5, 1]
    # too few GPUs: the later job waits
    assert f.allocate([linear, flat, linear], 2, 0.1) == [1, 1, 0]
    assert sum(f.allocate([linear] * 3, 10, 0.1)) <= 10
    with pytest.raises(ValueError, match="capacity"):
        f.allocate([linear], -1, 0.1)


def test_replica_pool_by_hand():
    env = simpy.Environment()
    pool = f.ReplicaPool(env, capacity=1, slo=1.5)
    pool.arrive(1.0)
    pool.arrive(1.0)  # waits for the first: latency 2
    env.run(until=0.5)
    pool.set_capacity(2)  # a second replica: the waiting request starts at 0.5
    env.run()
    assert pool.latencies == [1.0, 1.5]
    pool.set_capacity(0)  # lowering never interrupts: nothing is running anyway
    assert pool.busy == 0


def test_prediction_board_flat_history_and_diurnal_shape():
    board = f.PredictionBoard(np.full(int(f.DAY), 10.0))
    assert board.forecast(100.0, 12.0, 30.0) == pytest.approx(12.0)
    rate = f.diurnal_rate(np.arange(f.DAY), 20.0, 0.2)
    assert int(np.argmin(rate)) == 120 and int(np.argmax(rate)) == 840
    assert rate.min() == pytest.approx(4.0) and rate.max() == pytest.approx(20.0)


# ---------------------------------------------------------------------------------------------
# The simulation: honest by construction
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sims():
    config = f.Config()
    trace = f.make_trace(config, seed=1)
    return config, trace, {arm: f.simulate(arm, trace, config, seed=1) for arm in f.ARMS}


def test_every_job_finishes_under_every_policy(sims):
    _, trace, runs = sims
    for r in runs.values():
        assert r.completed == r.n_jobs == len(trace.jobs)
        assert (r.jct > 0).all()


def test_gpus_in_use_never_exceed_the_cluster(sims):
    config, _, runs = sims
    c = config.cluster
    cols = {name: i for i, name in enumerate(f.TIMELINE_COLUMNS)}
    for arm, r in runs.items():
        tl = r.timeline
        held, lent, reclaiming = tl[:, cols["held"]], tl[:, cols["lent"]], tl[:, cols["reclaiming"]]
        replicas, to_train, to_infer = tl[:, cols["replicas"]], tl[:, cols["to_train"]], tl[:, cols["to_infer"]]
        # the inference pool's GPUs are replicas, lent, or moving: never more, never fewer
        assert (replicas + lent + to_train + to_infer + reclaiming == c.infer_gpus).all(), arm
        # training holds at most its pool, what it was lent, and what it is giving back
        assert (held <= c.train_gpus + lent + reclaiming).all(), arm
        # a replica's GPU is handed over only after its last request ends
        assert (tl[:, cols["busy"]] <= replicas + to_train).all(), arm
        assert (np.diff(tl[:, 0]) >= 0).all()
        if arm in ("static", "elastic", "joint_only"):
            assert (lent == 0).all() and (replicas == c.infer_gpus).all(), arm


def test_reclaiming_takes_time_and_loaning_happens(sims):
    _, _, runs = sims
    cols = {name: i for i, name in enumerate(f.TIMELINE_COLUMNS)}
    for arm in ("loan_naive", "fapes"):
        tl = runs[arm].timeline
        assert tl[:, cols["lent"]].max() > 0, arm
        assert tl[:, cols["reclaiming"]].max() > 0, arm  # GPUs on their way back: not instant
        assert runs[arm].preemptions > 0


def test_same_seed_same_numbers(sims):
    config, trace, runs = sims
    again = f.simulate("fapes", trace, config, seed=1)
    assert np.array_equal(again.jct, runs["fapes"].jct)
    assert again.slo_violations == runs["fapes"].slo_violations


def test_bad_input():
    with pytest.raises(ValueError, match="policy"):
        f.simulate("pollux", f.make_trace(f.Config(n_jobs=2), 0))
    with pytest.raises(TypeError, match="trace"):
        f.simulate("fapes", [])
    with pytest.raises(ValueError, match="n_jobs"):
        f.Config(n_jobs=0)
    with pytest.raises(ValueError, match="checkpoint_min"):
        f.Cluster(checkpoint_min=0.0)
    with pytest.raises(TypeError, match="cluster"):
        f.Config(cluster=16)
    with pytest.raises(ValueError, match="load"):
        f.make_trace(f.Config(), 0, load=0.0)
    with pytest.raises(TypeError, match="config"):
        f.run("fast")


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outcomes_and_results():
    config = f.Config.fast()
    results = [f.run(config, seed=s) for s in range(5)]
    return check_results(f.CLAIMS, results, list(range(5)), "fapes"), results


def test_claims_hold_over_five_seeds(outcomes_and_results):
    outcomes, _ = outcomes_and_results
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_claims(outcomes_and_results):
    _, results = outcomes_and_results
    broken = []
    for r in results:
        b = copy.copy(r)
        # FaPES that is only the elastic baseline, and lets the SLO slip like naive loaning
        b.metrics = {
            **r.metrics,
            "fapes": {**r.metrics["elastic"], "slo_per_1000": r.metrics["static"]["slo_per_1000"] + 2},
        }
        broken.append(b)
    outcomes = check_results(f.CLAIMS, broken, list(range(5)), "fapes", guard=False)
    status = {o.claim.id: o.verdict.passed for o in outcomes}
    assert not status["fapes_lowers_jct_raises_goodput"] and not status["slo_held"]


def test_evaluate_runs_the_module_contract():
    outcomes = evaluate(f.CLAIMS[:1], lambda config, seed: f.run(config, seed=seed), [0], f.Config(sweep_loads=(1.0,)))
    assert outcomes[0].seeds == (0,)
