"""C4: the detector on hand-made syndromes, the real job (bounded, reaped), the fabric model, and the claims."""

import math
import multiprocessing as mp
import time
from dataclasses import replace

import numpy as np
import pytest
import torch

from toyscale.core.claims import evaluate, unmet
from toyscale.systems import c4
from toyscale.systems.c4 import diagnose as d
from toyscale.systems.c4 import plan as p

torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------
# Hand-made reports: the detector's rules on syndromes we know
# ---------------------------------------------------------------------------------------------


def make_reports(n=4, T=5, late=None, slow=None, hang=None, stalled=False, all_stuck_at=None):
    """Synthetic timings (s): iterations 1 s apart, all-reduce 10 ms, probes 1 ms.

    late = (rank, ms): the rank enters every all-reduce late and the others wait;
    slow = {(i, j): ms}: extra transfer time on connections; hang = (rank, t): the rank never
    enters iteration t; all_stuck_at = t: every rank enters t and none leaves.
    """
    shape2, shape3 = (n, T), (n, n, T)
    begin = np.tile(np.arange(T, dtype=float), (n, 1))
    enter = begin + 0.005
    if late:
        enter[late[0]] += late[1] / 1000.0
    exit_ = np.tile(enter.max(axis=0) + 0.010, (n, 1))
    end = exit_ + 0.02
    sent = np.full(shape3, np.nan)
    posted = np.full(shape3, np.nan)
    arrived = np.full(shape3, np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                sent[i, j] = exit_[i] + 0.001
                posted[i, j] = exit_[j] + 0.001
                arrived[i, j] = exit_[j] + 0.002 + (slow or {}).get((i, j), 0.0) / 1000.0
    own = np.ones(shape2)
    reduced = np.full(shape2, float(n))
    if hang:
        r, t = hang
        for a in (begin, enter, exit_, end, own, reduced):
            a[:, t:] = np.nan
        enter[:, t] = t + 0.005
        enter[r, t] = np.nan
        stalled = True
    if all_stuck_at is not None:
        t = all_stuck_at
        for a in (begin, exit_, end, own, reduced):
            a[:, t:] = np.nan
        enter[:, t + 1 :] = np.nan
        stalled = True
    return d.Reports(begin, end, enter, exit_, own, reduced, sent, posted, arrived, stalled, 0.0)


def test_healthy_syndrome_raises_no_alarm():
    verdict = d.diagnose(make_reports())
    assert verdict.kind == "healthy" and not verdict.alarm


def test_late_rank_is_non_communication_slow_and_the_baseline_blames_a_victim():
    reports = make_reports(late=(2, 40.0))
    verdict = d.diagnose(reports)
    assert (verdict.kind, verdict.ranks) == ("non_communication_slow", (2,))
    assert d.enter_lateness_ms(reports)[2] == pytest.approx(40.0)
    # the others wait 40 ms longer inside the collective: the baseline names one of them
    assert d.slowest_collective(reports) != 2
    assert d.collective_time_ms(reports)[2] == pytest.approx(10.0)


def test_slow_row_is_an_egress_nic_and_slow_column_an_ingress():
    row = d.diagnose(make_reports(slow={(1, j): 25.0 for j in (0, 2, 3)}))
    assert (row.kind, row.ranks, row.links) == ("communication_slow", (1,), ())
    column = d.diagnose(make_reports(slow={(i, 3): 25.0 for i in (0, 1, 2)}))
    assert (column.kind, column.ranks) == ("communication_slow", (3,))
    assert "ingress" in column.evidence


def test_single_slow_cell_is_a_link():
    verdict = d.diagnose(make_reports(slow={(2, 0): 25.0}))
    assert (verdict.kind, verdict.ranks, verdict.links) == ("communication_slow", (), ((2, 0),))
    assert verdict.matches(d.Fault("slow_link", 2, 0))
    assert not verdict.matches(d.Fault("slow_link", 0, 2))


def test_small_slowness_below_the_thresholds_is_ignored():
    assert d.diagnose(make_reports(late=(1, 5.0), slow={(0, 1): 3.0})).kind == "healthy"


def test_hangs_are_told_apart():
    verdict = d.diagnose(make_reports(hang=(3, 2)))
    assert (verdict.kind, verdict.ranks) == ("non_communication_hang", (3,))
    assert verdict.matches(d.Fault("hang", 3, start=2))
    stuck = d.diagnose(make_reports(all_stuck_at=2))
    assert stuck.kind == "communication_hang"


def test_transfer_time_counts_from_the_later_of_ready_and_posted():
    reports = make_reports(n=3, T=3)
    reports.sent[0, 1, :] = 10.0
    reports.posted[0, 1, :] = 10.5
    reports.arrived[0, 1, :] = 10.75
    assert np.allclose(reports.transfer_ms()[0, 1], 250.0)
    assert np.isnan(d.latency_matrix(reports)[0, 0])


def test_localize_cases():
    mask = np.zeros((4, 4), dtype=bool)
    mask[1, [0, 2, 3]] = True
    assert d.localize(mask)[0] == (1,)
    mask = np.zeros((4, 4), dtype=bool)
    mask[0, 1] = mask[2, 3] = True
    assert d.localize(mask)[1] == ((0, 1), (2, 3))


# ---------------------------------------------------------------------------------------------
# The effective-training-time model
# ---------------------------------------------------------------------------------------------


def test_effective_training_time_by_hand():
    # one fault per 10 h; 1 h stopped; checkpoints every 2 h lose 1 h: ETT = (10 − 1) / (10 + 1)
    recovery = d.Recovery(detect_s=1800, diagnose_s=1200, restart_s=600, checkpoint_interval_s=7200)
    assert d.effective_training_time(0.1, recovery) == pytest.approx(9 / 11)


def test_fault_rate_for_downtime_inverts_the_model():
    recovery = d.Recovery(1800, 7200, 600, 1800)
    rate = d.fault_rate_for_downtime(0.31, recovery)
    assert 1 - d.effective_training_time(rate, recovery) == pytest.approx(0.31)
    faster = replace(recovery, detect_s=1.0, diagnose_s=0.01)
    assert d.effective_training_time(rate, faster) > d.effective_training_time(rate, recovery)
    with pytest.raises(ValueError, match="downtime"):
        d.fault_rate_for_downtime(1.2, recovery)
    with pytest.raises(ValueError, match="job_faults_per_hour"):
        d.effective_training_time(0.0, recovery)
    with pytest.raises(ValueError, match="restart_s"):
        d.Recovery(1, 1, -1, 1)


# ---------------------------------------------------------------------------------------------
# The real job: bounded, reaped, and its all-reduce is a real sum
# ---------------------------------------------------------------------------------------------


SMALL_JOB = d.JobConfig(iterations=3, compute_ms=2.0)


def test_healthy_job_runs_sums_and_leaves_no_process():
    job = d.run_job(SMALL_JOB, None, seed=0)
    r = job.reports
    assert job.exitcodes == [0, 0, 0, 0] and not r.stalled
    assert list(r.complete_iterations()) == [0, 1, 2]
    # the ring all-reduce sums: every rank's reduced total = Σ_r own_r
    assert np.allclose(r.reduced, r.own.sum(axis=0, keepdims=True), rtol=1e-4, atol=1e-3)
    assert np.isfinite(r.transfer_ms()[~np.eye(4, dtype=bool)]).all()
    assert not mp.active_children()


def test_hang_is_detected_within_the_stall_timeout_and_every_rank_is_killed():
    config = replace(SMALL_JOB, iterations=4)
    started = time.monotonic()
    job = d.run_job(config, d.Fault("hang", 1, start=2), seed=0)
    assert time.monotonic() - started < config.stall_timeout_s + 10
    assert job.reports.stalled and all(code is not None for code in job.exitcodes)
    assert d.diagnose(job.reports).matches(job.fault)
    assert config.stall_timeout_s <= d.detection_latency_s(job) < config.stall_timeout_s + 2
    assert not mp.active_children()


def test_faults_are_drawn_at_random_but_reproducibly():
    a, b = d.draw_faults(d.JobConfig(), seed=3), d.draw_faults(d.JobConfig(), seed=3)
    assert a == b and [f.kind for f in a] == list(d.FAULT_KINDS)
    culprits = {f.rank for s in range(10) for f in d.draw_faults(d.JobConfig(), s)}
    assert culprits == {0, 1, 2, 3}


def test_bad_job_input_fails_before_starting_anything():
    with pytest.raises(ValueError, match="fault kind"):
        d.Fault("melted", 0)
    with pytest.raises(ValueError, match="peer"):
        d.Fault("slow_link", 0)
    with pytest.raises(ValueError, match="n_ranks"):
        d.JobConfig(n_ranks=2)
    with pytest.raises(ValueError, match="fault ranks"):
        d.run_job(SMALL_JOB, d.Fault("slow_nic", 7))
    with pytest.raises(ValueError, match="fault start"):
        d.run_job(SMALL_JOB, d.Fault("hang", 0, start=3))
    with pytest.raises(TypeError, match="config"):
        d.run_job("fast")
    with pytest.raises(TypeError, match="reports"):
        d.diagnose({"enter": []})
    assert not mp.active_children()


# ---------------------------------------------------------------------------------------------
# The fabric
# ---------------------------------------------------------------------------------------------


def test_max_min_rates_by_hand():
    # two hosts of leaf 0 send to two hosts of leaf 1 over the only spine: they share its uplink
    fabric = p.Fabric(p.FabricConfig(n_leaves=2, hosts_per_leaf=2, n_spines=1, n_jobs=1, ranks_per_job=2))
    paths = [fabric.candidate_paths(0, 2)[0], fabric.candidate_paths(1, 3)[0]]
    assert np.allclose(p.max_min_rates(paths, fabric), [0.5, 0.5])
    # a third flow inside leaf 1 uses no spine and keeps its line rate; the others still share
    paths.append(fabric.candidate_paths(2, 3)[0])
    rates = p.max_min_rates(paths, fabric)
    assert np.allclose(rates, [0.5, 0.5, 0.5])  # host 3's downlink carries flows 2 and 3: 0.5 each
    thin = p.Fabric(
        p.FabricConfig(n_leaves=2, hosts_per_leaf=2, n_spines=1, n_jobs=1, ranks_per_job=2, uplink_capacity=0.3)
    )
    assert np.allclose(
        p.max_min_rates([thin.candidate_paths(0, 2)[0], thin.candidate_paths(1, 3)[0]], thin), [0.15, 0.15]
    )


def test_equal_cost_groups():
    fabric = p.Fabric(p.FabricConfig())
    assert len(fabric.candidate_paths(0, 5)) == 4  # one path per spine
    assert len(fabric.candidate_paths(0, 1)) == 1  # same leaf: no spine
    bonded = p.Fabric(p.FabricConfig(ports_per_nic=2))
    assert len(bonded.candidate_paths(0, 5)) == 2 * 4 * 2  # source port × spine × destination port
    broken = p.Fabric(p.FabricConfig(failed_links=((0, 0),)))
    assert len(broken.candidate_paths(0, 5)) == 3


@pytest.mark.parametrize("variant", list(c4.VARIANTS))
def test_plan_never_exceeds_capacity_and_bytes_are_equal(variant):
    config = p.FabricConfig(**c4.VARIANTS[variant])
    fabric = p.Fabric(config)
    for seed in range(8):
        flows = p.ring_flows(config, seed)
        planned = p.plan_paths(flows, fabric, seed=seed)
        loads = p.link_loads(flows, planned, fabric)
        bound = p.load_lower_bound(flows, fabric)
        assert max(loads.values()) == pytest.approx(max(bound, 1.0) if not config.failed_links else bound) or (
            max(loads.values()) <= max(bound, 1.0) + 1e-9
        )
        if not config.failed_links:
            assert max(loads.values()) <= 1.0 + 1e-9  # no link over capacity
        plan_run = p.simulate(flows, planned, fabric)
        ecmp_run = p.simulate(flows, p.ecmp_paths(flows, fabric, seed), fabric)
        total = sum(f.size for f in flows)
        for run in (plan_run, ecmp_run):
            assert run.max_utilization <= 1.0 + 1e-9
            assert np.allclose(run.delivered, [f.size for f in flows])
        assert plan_run.delivered.sum() == pytest.approx(ecmp_run.delivered.sum()) == pytest.approx(total)


def test_ecmp_is_a_deterministic_draw_per_hash_seed():
    config = p.FabricConfig()
    fabric = p.Fabric(config)
    flows = p.ring_flows(config, 0)
    assert p.ecmp_paths(flows, fabric, 5) == p.ecmp_paths(flows, fabric, 5)
    assert any(p.ecmp_paths(flows, fabric, 5) != p.ecmp_paths(flows, fabric, h) for h in range(6, 10))


def test_a_ring_step_is_one_flow_per_rank():
    config = p.FabricConfig()
    flows = p.ring_flows(config, 1)
    assert len(flows) == config.n_jobs * config.ranks_per_job
    assert sorted(f.src for f in flows) == sorted(f.dst for f in flows)
    assert len({f.src for f in flows}) == len(flows)  # each host in one job only
    with pytest.raises(ValueError, match="exceeds"):
        p.FabricConfig(n_jobs=5)
    with pytest.raises(ValueError, match="failed link"):
        p.FabricConfig(failed_links=((0, 9),))


# ---------------------------------------------------------------------------------------------
# The whole experiment and its claims
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_results():
    results = [c4.run(c4.Config.fast(), seed=s) for s in range(5)]
    assert not mp.active_children(), "a rank outlived its job"
    return results


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(c4.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)


def test_run_is_complete_and_reproducible_where_it_can_be(fast_results):
    result = fast_results[0]
    assert set(result.metrics) == {"c4d", "slowest_collective", "watchdog", "ecmp", "c4p"}
    assert [r.fault.kind if r.fault else None for r in result.records] == [None, *d.FAULT_KINDS]
    assert set(result.matrices) == {"healthy", "slow_link", "slow_nic"}
    for plan_bytes, ecmp_bytes in result.delivered_bytes.values():
        assert plan_bytes == pytest.approx(ecmp_bytes)
    # timings are measured, so they vary; the faults drawn and the fabric numbers do not
    assert [r.fault for r in result.records[1:]] == d.draw_faults(result.config.job, 0)
    assert c4._c4p_experiment(result.config, 0)[0] == result.step_ratios
    # the diagnosis is a function of the reports alone
    for record in result.records:
        assert d.diagnose(record.reports, result.config.thresholds) == record.diagnosis


def test_a_blind_detector_fails_the_claim(fast_results):
    # thresholds far above the faults: C4D misses every slow fault, and the claim must notice
    blind = d.Thresholds(late_ms=1e6, slow_cell_ms=1e6)
    broken = []
    for r in fast_results:
        hits = {rec.fault.kind: d.diagnose(rec.reports, blind).matches(rec.fault) for rec in r.records if rec.fault}
        metrics = {arm: dict(values) for arm, values in r.metrics.items()}
        metrics["c4d"]["accuracy"] = float(np.mean(list(hits.values())))
        metrics["c4d"]["slow_compute_correct"] = float(hits["slow_compute"])
        broken.append(replace(r, metrics=metrics))
    assert not c4.CLAIMS[0].check(broken).passed


def test_ecmp_in_place_of_the_plan_fails_the_claim(fast_results):
    broken = []
    for r in fast_results:
        metrics = {arm: dict(values) for arm, values in r.metrics.items()}
        metrics["c4p"]["step_ratio"] = metrics["ecmp"]["step_ratio"]
        broken.append(replace(r, metrics=metrics))
    claim = next(c for c in c4.CLAIMS if c.id == "planned_paths_near_ideal")
    assert not claim.check(broken).passed


def test_figures_build(fast_results):
    result = fast_results[0]
    figures = [c4.fig_timeline(result), c4.fig_downtime(result), c4.fig_step_times(result)]
    figures += [c4.fig_latency_matrix(result, kind) for kind in ("slow_nic", "slow_link", "healthy")]
    for fig in figures:
        assert fig.data and fig.layout.title.text
    with pytest.raises(ValueError, match="kind"):
        c4.fig_latency_matrix(result, "hang")


def test_bad_config_is_refused():
    with pytest.raises(TypeError, match="config"):
        c4.run(config="fast")
    with pytest.raises(ValueError, match="hash_seeds"):
        c4.Config(hash_seeds=1)
    with pytest.raises(ValueError, match="baseline_downtime"):
        c4.Config(baseline_downtime=0.0)
    with pytest.raises(TypeError, match="job"):
        c4.Config(job={"n_ranks": 4})
    assert math.isclose(c4.Config().watchdog_s, 1800.0)
