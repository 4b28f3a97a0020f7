"""C4P: planned paths for collective traffic on a leaf-spine fabric, against ECMP hashing.

A ring all-reduce sends, at every step, one long-lived flow from each rank to the next; every flow
carries the same bytes and the step ends when the slowest flow does. On a leaf-spine fabric a
flow between two leaves can take any spine. ECMP picks one by hashing the flow's header: several
flows can land on the same uplink and share it while other uplinks idle. C4P knows the flows in
advance (they are the job's ring) and *plans* their paths so that no link carries more than its
capacity, and spreads each connection over the ports of a bonded (dual-port) NIC.

The model is flow-level: a `Fabric` is a networkx digraph of hosts, NIC ports, leaves and spines
with link capacities (the NIC's line rate is 1); rates are max-min fair (`max_min_rates`, progressive
filling: raise every unfrozen flow's rate together until a link fills, freeze the flows on it,
repeat), and `simulate` advances from one flow completion to the next. `ecmp_paths` draws one
path per flow uniformly among the equal-cost shortest paths (a hash seed is a random draw);
`plan_paths` plans on a model of that sharing (`SharingModel`: each flow at its most crowded
link's equal share), never on the simulation that scores it; `ecmp_search_paths` gives ECMP the same model and
the same number of evaluated assignments, spent on hash draws.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

Link = tuple[object, object]


@dataclass(frozen=True)
class FabricConfig:
    """A two-tier leaf-spine fabric and the jobs on it."""

    n_leaves: int = 4  # top-of-rack switches
    hosts_per_leaf: int = 4  # hosts (one NIC each) under every leaf
    n_spines: int = 4  # spine switches: hosts_per_leaf spines make the fabric non-blocking (1:1)
    n_jobs: int = 4  # concurrent ring all-reduce jobs
    ranks_per_job: int = 4  # hosts per job, one rank per host
    ports_per_nic: int = 1  # 2 = a bonded dual-port NIC, each port at half the line rate
    qps_per_connection: int = 1  # connections (queue pairs) per ring neighbour on every port, each hashed alone
    background_flows: int = 0  # long flows of other tenants from hosts no job uses, hashed by ECMP, not planned
    background_bytes: float = 4.0  # bytes of each background flow (several ring steps: it outlasts the step)
    uplink_capacity: float = 1.0  # leaf ↔ spine link capacity, in units of the NIC line rate
    failed_links: tuple[tuple[int, int], ...] = ()  # (leaf, spine) pairs whose links are down
    step_bytes: float = 1.0  # bytes of one ring step per connection (the ideal step time is bytes / 1)

    def __post_init__(self) -> None:
        for name in (
            "n_leaves",
            "hosts_per_leaf",
            "n_spines",
            "n_jobs",
            "ranks_per_job",
            "ports_per_nic",
            "qps_per_connection",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_leaves < 2:
            raise ValueError(f"n_leaves must be >= 2 (a fabric needs two leaves), got {self.n_leaves}")
        if self.ranks_per_job < 2:
            raise ValueError(f"ranks_per_job must be >= 2 (a ring needs two ranks), got {self.ranks_per_job}")
        if self.n_jobs * self.ranks_per_job > self.n_leaves * self.hosts_per_leaf:
            raise ValueError(
                f"n_jobs × ranks_per_job = {self.n_jobs * self.ranks_per_job} exceeds the "
                f"{self.n_leaves * self.hosts_per_leaf} hosts"
            )
        free = self.n_leaves * self.hosts_per_leaf - self.n_jobs * self.ranks_per_job
        if not 0 <= self.background_flows <= free:
            raise ValueError(
                f"background_flows must be in [0, {free}] (one per host no job uses), got {self.background_flows}"
            )
        if self.uplink_capacity <= 0 or self.step_bytes <= 0 or self.background_bytes <= 0:
            raise ValueError(
                f"uplink_capacity and step_bytes must be > 0, got {self.uplink_capacity}, {self.step_bytes}"
            )
        for leaf, spine in self.failed_links:
            if not (0 <= leaf < self.n_leaves and 0 <= spine < self.n_spines):
                raise ValueError(f"failed link ({leaf}, {spine}) is not a leaf-spine pair of this fabric")


@dataclass
class Flow:
    """A directed flow of `size` bytes from host `src` to host `dst`, belonging to `job` (−1: background).

    demand: the share of the NIC's line rate the flow would take alone (1 / sub-flows per connection).
    """

    src: int
    dst: int
    job: int
    size: float
    demand: float = 1.0


class Fabric:
    """The fabric as a networkx DiGraph whose edges carry a `capacity`."""

    def __init__(self, config: FabricConfig) -> None:
        self.config = config
        g = nx.DiGraph()
        c = config
        port_capacity = 1.0 / c.ports_per_nic
        for leaf in range(c.n_leaves):
            for k in range(c.hosts_per_leaf):
                host = leaf * c.hosts_per_leaf + k
                for p in range(c.ports_per_nic):
                    port = ("port", host, p)
                    # host → port and back: inside the NIC, never a bottleneck
                    g.add_edge(("host", host), port, capacity=np.inf)
                    g.add_edge(port, ("host", host), capacity=np.inf)
                    g.add_edge(port, ("leaf", leaf), capacity=port_capacity)
                    g.add_edge(("leaf", leaf), port, capacity=port_capacity)
            for spine in range(c.n_spines):
                if (leaf, spine) in c.failed_links:
                    continue
                g.add_edge(("leaf", leaf), ("spine", spine), capacity=c.uplink_capacity)
                g.add_edge(("spine", spine), ("leaf", leaf), capacity=c.uplink_capacity)
        self.graph = g
        self._paths: dict[tuple[int, int], list[tuple[Link, ...]]] = {}

    @property
    def n_hosts(self) -> int:
        return self.config.n_leaves * self.config.hosts_per_leaf

    def leaf_of(self, host: int) -> int:
        return host // self.config.hosts_per_leaf

    def candidate_paths(self, src: int, dst: int) -> list[tuple[Link, ...]]:
        """Every equal-cost shortest path src → dst, as tuples of links (the ECMP group)."""
        key = (src, dst)
        if key not in self._paths:
            nodes = nx.all_shortest_paths(self.graph, ("host", src), ("host", dst))
            paths = [tuple(itertools.pairwise(p)) for p in nodes]
            self._paths[key] = sorted(paths, key=str)
        return self._paths[key]

    def capacity(self, link: Link) -> float:
        return float(self.graph.edges[link]["capacity"])


def ring_flows(config: FabricConfig, seed: int) -> list[Flow]:
    """The flows of one ring step of every job: each rank sends `step_bytes` to the next.

    Jobs get random disjoint hosts (a busy cluster scatters them over leaves) and their ring
    visits them in a random order. Each connection is split into one sub-flow per port of a bonded
    NIC and per queue pair (C4's multiple connections per peer), each with its share of the bytes.
    Background flows (job −1) leave hosts no job uses, towards random other hosts.
    """
    rng = np.random.default_rng(seed)
    n_hosts = config.n_leaves * config.hosts_per_leaf
    order = rng.permutation(n_hosts)
    used = config.n_jobs * config.ranks_per_job
    hosts = order[:used]
    split = config.ports_per_nic * config.qps_per_connection
    flows = []
    for job in range(config.n_jobs):
        ring = hosts[job * config.ranks_per_job : (job + 1) * config.ranks_per_job]
        for r, src in enumerate(ring):
            dst = ring[(r + 1) % len(ring)]
            for _ in range(split):
                flows.append(Flow(int(src), int(dst), job, config.step_bytes / split, 1.0 / split))
    if config.background_flows:
        background = np.random.default_rng([seed, 0xB6])
        for src in order[used : used + config.background_flows]:
            dst = int(background.choice([h for h in range(n_hosts) if h != src]))
            flows.append(Flow(int(src), dst, -1, config.background_bytes, 1.0))
    return flows


# ---------------------------------------------------------------------------------------------
# Path selection
# ---------------------------------------------------------------------------------------------


def ecmp_paths(flows: Sequence[Flow], fabric: Fabric, seed: int) -> list[tuple[Link, ...]]:
    """ECMP: each flow takes a path drawn uniformly from its equal-cost group by the hash seed.

    A hash of the flow's header is, for planning purposes, a uniform random draw that the
    operator cannot steer; `seed` stands for one assignment of header fields (ports, QP numbers).
    """
    rng = np.random.default_rng([seed, 0xC4])
    paths = []
    for flow in flows:
        group = fabric.candidate_paths(flow.src, flow.dst)
        paths.append(group[int(rng.integers(len(group)))])
    return paths


def link_loads(flows: Sequence[Flow], paths: Sequence[tuple[Link, ...]], fabric: Fabric) -> dict[Link, float]:
    """Offered load of every used link: Σ over its flows of the flow's line-rate demand / capacity."""
    loads: dict[Link, float] = {}
    for flow, path in zip(flows, paths, strict=True):
        for link in path:
            capacity = fabric.capacity(link)
            if np.isfinite(capacity):
                loads[link] = loads.get(link, 0.0) + flow.demand / capacity
    return loads


def load_lower_bound(flows: Sequence[Flow], fabric: Fabric) -> float:
    """A lower bound on the max link load of any assignment of whole flows to paths.

    The flows that must leave a leaf (or a host) share its uplinks (or its ports): n unsplittable
    flows over m equal links put at least ⌈n / m⌉ flows on one of them. The same holds into a leaf.
    """
    c = fabric.config
    flows = [f for f in flows if f.job >= 0]
    demand = 1.0 / (c.ports_per_nic * c.qps_per_connection)
    bound = 0.0
    for leaf in range(c.n_leaves):
        ups = [s for s in range(c.n_spines) if (leaf, s) not in c.failed_links]
        out = sum(fabric.leaf_of(f.src) == leaf != fabric.leaf_of(f.dst) for f in flows)
        into = sum(fabric.leaf_of(f.dst) == leaf != fabric.leaf_of(f.src) for f in flows)
        for n in (out, into):
            if n:
                bound = max(bound, -(-n // max(len(ups), 1)) * demand / c.uplink_capacity)
    port_capacity = 1.0 / c.ports_per_nic
    for host in range(fabric.n_hosts):
        for n in (sum(f.src == host for f in flows), sum(f.dst == host for f in flows)):
            if n:
                per_port = -(-n // c.ports_per_nic)
                bound = max(bound, per_port * demand / port_capacity)
    return bound


def background_paths(flows: Sequence[Flow], fabric: Fabric, seed: int) -> dict[int, tuple[Link, ...]]:
    """The paths of the background flows (job −1): hashed by ECMP once per placement, the same for every arm."""
    drawn = ecmp_paths(flows, fabric, seed * 7919 + 17)
    return {i: drawn[i] for i, f in enumerate(flows) if f.job < 0}


def random_paths(flows: Sequence[Flow], fabric: Fabric, seed: int) -> list[tuple[Link, ...]]:
    """A plan that reads no loads: every job flow on a path drawn uniformly from its group (a falsifier)."""
    return ecmp_paths(flows, fabric, seed * 104_729 + 3)


class SharingModel:
    """The planner's model of the fabric: max-min sharing at each flow's bottleneck.

    Under max-min fairness the flows on a link share it equally, whatever their demands, and a flow
    is held to its most crowded link's share: rate_f ≈ min over its links l of capacity_l / n_l
    (n_l: flows on l). That is the first round of progressive filling (`max_min_rates`), exact
    for the flows on the most crowded links and a lower bound for the rest. A flow's modelled time
    is its bytes over that rate, a job's the slowest of its flows. `score` is (mean modelled job
    step time / ideal, Σ_l (n_l / capacity_l)²): lower is better, the second term breaks ties
    towards spread. It never replays the flows' completions, as `simulate` (which scores) does.
    """

    def __init__(self, flows: Sequence[Flow], fabric: Fabric, fixed: dict[int, tuple[Link, ...]]) -> None:
        self.flows, self.fabric = list(flows), fabric
        self.groups = [[fixed[i]] if i in fixed else fabric.candidate_paths(f.src, f.dst) for i, f in enumerate(flows)]
        links = sorted(
            {link for g in self.groups for path in g for link in path if np.isfinite(fabric.capacity(link))}, key=str
        )
        index = {link: k for k, link in enumerate(links)}
        dummy = len(links)  # a link no flow loads: pads the shorter paths
        self.capacity = np.array([fabric.capacity(link) for link in links] + [np.inf])
        width = max(len(path) for g in self.groups for path in g)
        self.paths = [
            [np.array([index[x] for x in path if x in index] + [dummy] * width)[:width] for path in g]
            for g in self.groups
        ]
        self.size = np.array([f.size for f in flows])
        self.ideal = max(f.size / f.demand for f in flows if f.job >= 0)
        jobs = sorted({f.job for f in flows if f.job >= 0})
        self.job_of = np.array([jobs.index(f.job) if f.job >= 0 else -1 for f in flows])
        self.n_jobs = len(jobs)

    def counts(self, choice: Sequence[int]) -> np.ndarray:
        counts = np.zeros(len(self.capacity))
        for i, k in enumerate(choice):
            np.add.at(counts, self.paths[i][k], 1.0)
        counts[-1] = 0.0
        return counts

    def flow_times(self, choice: Sequence[int], counts: np.ndarray) -> np.ndarray:
        table = np.stack([self.paths[i][k] for i, k in enumerate(choice)])
        crowding = counts[table] / self.capacity[table]
        return self.size * crowding.max(axis=1) / self.ideal

    def score(self, choice: Sequence[int], counts: np.ndarray) -> tuple[tuple[float, float], np.ndarray]:
        times = self.flow_times(choice, counts)
        steps = np.zeros(self.n_jobs)
        np.maximum.at(steps, self.job_of[self.job_of >= 0], times[self.job_of >= 0])
        spread = float(((counts[:-1] / self.capacity[:-1]) ** 2).sum())
        return (round(float(steps.mean()), 9), round(spread, 9)), times

    def assignment(self, choice: Sequence[int]) -> list[tuple[Link, ...]]:
        return [self.groups[i][k] for i, k in enumerate(choice)]


def plan_paths(
    flows: Sequence[Flow],
    fabric: Fabric,
    *,
    fixed: dict[int, tuple[Link, ...]] | None = None,
    budget: int = 256,
    seed: int = 0,
) -> list[tuple[Link, ...]]:
    """C4P: choose every job flow's path so that the `SharingModel`'s step time is least.

    Flows listed in `fixed` (index → path: the background traffic C4P does not steer) keep their
    paths. Greedy placement (each flow, in a random order, on the path whose most crowded link,
    in flows per unit capacity, is least crowded), then local search: move a flow the model holds
    back to another path of its group while that lowers the model's score; restart from another
    order while budget remains. At most `budget` complete assignments are scored by the model (the
    budget ECMP's hash search gets, `ecmp_search_paths`); it stops early at the ideal step time.
    """
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    model = SharingModel(flows, fabric, dict(fixed or {}))
    rng = np.random.default_rng(seed)
    free = [i for i, g in enumerate(model.groups) if len(g) > 1]
    best, best_score, used = None, None, 0
    while used < budget:
        choice = [0] * len(flows)
        counts = model.counts(choice) * 0.0
        for i in range(len(flows)):
            if i not in free:
                np.add.at(counts, model.paths[i][0], 1.0)
        for i in [free[k] for k in rng.permutation(len(free))]:
            crowd = [float(((counts[p] + 1.0) / model.capacity[p]).max()) for p in model.paths[i]]
            choice[i] = int(np.argmin(crowd))
            np.add.at(counts, model.paths[i][choice[i]], 1.0)
        counts[-1] = 0.0
        score, times = model.score(choice, counts)
        used += 1
        improved = True
        while improved and used < budget and score[0] > 1.0 + 1e-9:
            improved = False
            for i in sorted((k for k in free if times[k] > 1.0 + 1e-9), key=lambda k: -times[k]):
                old = choice[i]
                for k in range(len(model.paths[i])):
                    if k == old or used >= budget:
                        continue
                    np.add.at(counts, model.paths[i][old], -1.0)
                    np.add.at(counts, model.paths[i][k], 1.0)
                    counts[-1] = 0.0
                    choice[i] = k
                    new, new_times = model.score(choice, counts)
                    used += 1
                    if new < score:
                        score, times, improved = new, new_times, True
                        break
                    np.add.at(counts, model.paths[i][k], -1.0)
                    np.add.at(counts, model.paths[i][old], 1.0)
                    counts[-1] = 0.0
                    choice[i] = old
                if improved or used >= budget:
                    break
        if best_score is None or score < best_score:
            best, best_score = list(choice), score
        if best_score[0] <= 1.0 + 1e-9:
            break
    return model.assignment(best)


def ecmp_search_paths(
    flows: Sequence[Flow],
    fabric: Fabric,
    *,
    fixed: dict[int, tuple[Link, ...]] | None = None,
    budget: int = 256,
    seed: int = 0,
) -> list[tuple[Link, ...]]:
    """ECMP with a search: `budget` hash seeds drawn (a practitioner re-rolling source ports or QP numbers),
    the draw the `SharingModel` scores best kept: the planner's model and budget, spent on hashing."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    fixed = dict(fixed or {})
    model = SharingModel(flows, fabric, fixed)
    best, best_score = None, None
    for h in range(budget):
        paths = ecmp_paths(flows, fabric, seed * 1_000_003 + h)
        choice = [0 if i in fixed else model.groups[i].index(p) for i, p in enumerate(paths)]
        score = model.score(choice, model.counts(choice))[0]
        if best_score is None or score < best_score:
            best, best_score = choice, score
    return model.assignment(best)


# ---------------------------------------------------------------------------------------------
# Max-min fair rates and the flow-level simulation
# ---------------------------------------------------------------------------------------------


def max_min_rates(paths: Sequence[tuple[Link, ...]], fabric: Fabric) -> np.ndarray:
    """Max-min fair rates by progressive filling.

    All unfrozen flows rise together by δ = min over links l of remaining_l / (unfrozen flows on l);
    the links that fill freeze their flows; repeat until every flow is frozen. No link ever
    carries more than its capacity, and no flow can gain without taking from a slower one.
    """
    links = sorted({link for path in paths for link in path if np.isfinite(fabric.capacity(link))}, key=str)
    index = {link: k for k, link in enumerate(links)}
    A = np.zeros((len(links), len(paths)))  # A[l, f] = 1 when flow f crosses link l
    for f, path in enumerate(paths):
        for link in path:
            if link in index:
                A[index[link], f] = 1.0
    remaining = np.array([fabric.capacity(link) for link in links])
    rates = np.zeros(len(paths))
    active = np.ones(len(paths), dtype=bool)
    while active.any():
        counts = A[:, active].sum(axis=1)
        used = counts > 0
        if not used.any():
            raise ValueError("a flow crosses no capacity-limited link, so its max-min rate is unbounded")
        # δ = min_l remaining_l / n_l over links that carry unfrozen flows
        delta = float(np.min(remaining[used] / counts[used]))
        rates[active] += delta
        remaining -= delta * counts
        full = used & (remaining <= 1e-12 * np.maximum(1.0, remaining.max(initial=1.0)))
        frozen = (A[full].sum(axis=0) > 0) & active
        active &= ~frozen
        remaining = np.maximum(remaining, 0.0)
    return rates


@dataclass
class FlowRun:
    """The outcome of simulating flows to completion."""

    finish: np.ndarray  # finish time of every flow (the ideal step time is 1)
    delivered: np.ndarray  # bytes delivered per flow (∫ rate dt)
    max_utilization: float  # the largest Σ rates / capacity over links and time (≤ 1)


def simulate(flows: Sequence[Flow], paths: Sequence[tuple[Link, ...]], fabric: Fabric) -> FlowRun:
    """Run the flows to completion: max-min fair rates, recomputed at every flow completion."""
    if len(flows) != len(paths):
        raise ValueError(f"paths must give one path per flow: {len(flows)} flows, {len(paths)} paths")
    remaining = np.array([f.size for f in flows], dtype=float)
    finish = np.full(len(flows), np.nan)
    delivered = np.zeros(len(flows))
    now, max_util = 0.0, 0.0
    active = np.ones(len(flows), dtype=bool)
    while active.any():
        ids = np.flatnonzero(active)
        rates = max_min_rates([paths[i] for i in ids], fabric)
        load: dict[Link, float] = {}
        for i, rate in zip(ids, rates, strict=True):
            for link in paths[i]:
                load[link] = load.get(link, 0.0) + rate
        max_util = max(max_util, *(v / fabric.capacity(k) for k, v in load.items()))
        # advance to the next completion: dt = min_f remaining_f / rate_f
        dt = float(np.min(remaining[ids] / rates))
        now += dt
        delivered[ids] += rates * dt
        remaining[ids] -= rates * dt
        done = ids[remaining[ids] <= 1e-9 * np.maximum(1.0, [flows[i].size for i in ids])]
        finish[done] = now
        remaining[done] = 0.0
        active[done] = False
    return FlowRun(finish=finish, delivered=delivered, max_utilization=max_util)


def job_step_times(flows: Sequence[Flow], run: FlowRun, ideal: float) -> np.ndarray:
    """Per job, its ring step time (its slowest flow's finish) relative to the ideal step time."""
    jobs = sorted({f.job for f in flows if f.job >= 0})
    return np.array([max(run.finish[i] for i, f in enumerate(flows) if f.job == j) / ideal for j in jobs])


def reference_arrays() -> dict[str, np.ndarray]:
    """The default fabric workload at seed 0 (one ring step of every job), as its data card fingerprints."""
    flows = ring_flows(FabricConfig(), seed=0)
    return {
        "src": np.array([f.src for f in flows], dtype=np.int64),
        "dst": np.array([f.dst for f in flows], dtype=np.int64),
        "job": np.array([f.job for f in flows], dtype=np.int64),
    }
