"""The committed results (`data/llm/glvq_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (the claims table and the attribution table), and the
warm-up's boundary over tail heaviness (CLAIMS.md §7), with and without the groups' shape. The
boundary over bits per weight comes from the same five runs (`bits_boundary`). Rebuild with `python
-m toyscale data --rebuild glvq_results` (a few minutes on one core). The tests and `reproduce`
recompute everything and never read this file; whether it is current is decided by its fingerprint
(`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .experiment import PAPER_SIDE_CHARGE, SYNTHETIC_KINDS, Config, Result, run
from .synthetic import SYNTHETIC_ARMS, equal_rate_gain, synthetic_groups, synthetic_points

#: Tail heaviness 1/ν of the warm-up's boundary: from Gaussian (0) to Student-t with ν = 2.5.
TAIL_POINTS = (0.0, 0.1, 0.2, 1 / 3, 0.4)
_POINT_FIELDS = ("bits", "rate", "sqnr")
#: The LM boundary (CLAIMS.md §7): the share of the per-group side information the budget charges, from none
#: through the paper's (1/64) to all of it (the toy's own 2,048-weight groups, the chapter's previous world).
SIDE_POINTS = (0.0, PAPER_SIDE_CHARGE, 0.25, 1.0)


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (no lattice picture) and the two tail boundaries."""

    results: list[Result]
    tails: Boundary  # groups stretched and rotated, as the warm-up's structured groups
    tails_flat: Boundary  # i.i.d. coordinates: tails without a shape
    side: dict[str, Boundary] = field(default_factory=dict)  # RTN − GLVQ (and − GLVQ, μ free) over the side charge


def tail_gain(config: Config, inverse_dof: float, seed: int, *, mixing: bool = True) -> float:
    """GLVQ's SQNR at 2 index bits minus the best scalar grid's at equal total bits, on groups with tails 1/ν."""
    dof = math.inf if inverse_dof == 0 else 1 / inverse_dof
    X = synthetic_groups(
        config.synthetic_groups, config.synthetic_vectors, config.synthetic_dim, seed=seed, dof=dof, mixing=mixing
    )
    points = synthetic_points(X, (2,), config.synthetic_groups, config.glvq, config.synthetic_method)
    return equal_rate_gain(points, 2, "best_scalar")


def tail_boundary(config: Config, points: Sequence[float], seeds: Sequence[int], *, mixing: bool = True) -> Boundary:
    """Where the warm-up's gain lives: Δ SQNR at equal total bits across tail heaviness 1/ν (CLAIMS.md §7).

    At 1/ν = 0 the coordinates are Gaussian: no tails for the compander, and (without `mixing`)
    no shape for the lattice, the i.i.d. Gaussian control.
    """
    shape = "stretched and rotated groups" if mixing else "i.i.d. coordinates"
    return sweep(
        lambda x, seed: tail_gain(config, x, seed, mixing=mixing),
        points,
        seeds,
        parameter=f"tail heaviness 1/ν ({shape})",
        delta_name="Δ SQNR dB (GLVQ − best scalar grid)",
    )


#: The LM boundary's two rows: GLVQ as the paper runs it, and with μ free (a departure).
SIDE_METHODS = {"glvq": "glvq", "glvq_mu_free": "glvq_mu_free"}


def side_gains(config: Config, charge: float, seed: int) -> dict[str, float]:
    """RTN_sb's 2-bit test bpc minus GLVQ's and minus GLVQ's with μ free, with `charge` of the side information."""
    changed = replace(
        config,
        side_charge=charge,
        arms=("glvq", "glvq_mu_free", "rtn_sb"),
        bits=(2,),
        ablation_bits=(2,),
        synthetic=False,
    )
    m = run(changed, seed=seed).metrics
    return {name: m["rtn_sb"]["bpc@2"] - m[arm]["bpc@2"] for name, arm in SIDE_METHODS.items()}


def side_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> dict[str, Boundary]:
    """Where the LM effect lives: Δ bpc (RTN_sb − GLVQ) across the side information's share (CLAIMS.md §7)."""
    gains = {(x, s): side_gains(config, x, s) for x in points for s in seeds}
    return {
        name: Boundary(
            "share of the per-group side information charged",
            tuple(float(x) for x in points),
            tuple(seeds),
            np.array([[gains[x, s][name] for s in seeds] for x in points]),
            f"Δ test bpc at 2 bits (RTN_sb − {'GLVQ' if name == 'glvq' else 'GLVQ, μ free'})",
        )
        for name in SIDE_METHODS
    }


def bits_boundary(results: Sequence[Result]) -> Boundary:
    """GLVQ's edge over the strongest scalar grid at every nominal width of the runs (positive favours GLVQ)."""
    bits = results[0].config.bits
    deltas = np.array(
        [[r.metrics["best_scalar"][f"bpc@{b}"] - r.metrics["glvq"][f"bpc@{b}"] for r in results] for b in bits]
    )
    return Boundary(
        "nominal bits per weight",
        tuple(float(b) for b in bits),
        tuple(r.seed for r in results),
        deltas,
        "Δ test bpc (strongest scalar grid − GLVQ)",
    )


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds` and pack their numbers and the tail boundaries."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    arms = sorted({arm for r in results for arm in r.metrics})
    names = sorted({name for r in results for m in r.metrics.values() for name in m})
    grid = np.full((len(results), len(arms), len(names)), np.nan)
    for i, result in enumerate(results):
        for j, arm in enumerate(arms):
            for k, name in enumerate(names):
                grid[i, j, k] = result.metrics.get(arm, {}).get(name, np.nan)
    chosen_keys = sorted(results[0].chosen)
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "metric_names": np.array(names),
        "metrics": grid,
        "chosen_keys": np.array(chosen_keys),
        "chosen": np.array([[r.chosen[key] for key in chosen_keys] for r in results]),
        "train_history": np.array([r.train_history for r in results], dtype=np.float64),
        "n_weights": np.array([r.n_weights for r in results], dtype=np.int64),
        "lm_loaded": np.array([r.lm_loaded for r in results]),
    }
    for kind in SYNTHETIC_KINDS:
        for arm in SYNTHETIC_ARMS:
            for name in _POINT_FIELDS:
                arrays[f"synthetic/{kind}/{arm}/{name}"] = np.array(
                    [r.synthetic[kind][arm][name] for r in results], dtype=np.float64
                )
    for prefix, mixing in (("tails", True), ("tails_flat", False)):
        boundary = tail_boundary(config, TAIL_POINTS, seeds, mixing=mixing)
        arrays.update({f"{prefix}/{key}": value for key, value in boundary.as_arrays().items()})
    for name, boundary in side_boundary(config, SIDE_POINTS, seeds).items():
        arrays.update({f"side_{name}/{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    config = Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]
    chosen_keys = [str(k) for k in arrays["chosen_keys"]]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        metrics = {
            arm: {
                name: float(arrays["metrics"][i, j, k])
                for k, name in enumerate(names)
                if not np.isnan(arrays["metrics"][i, j, k])
            }
            for j, arm in enumerate(arms)
        }
        synthetic = {
            kind: {
                arm: {
                    name: [int(v) if name == "bits" else float(v) for v in arrays[f"synthetic/{kind}/{arm}/{name}"][i]]
                    for name in _POINT_FIELDS
                }
                for arm in SYNTHETIC_ARMS
            }
            for kind in SYNTHETIC_KINDS
        }
        results.append(
            Result(
                config=config,
                seed=int(seed),
                metrics=metrics,
                chosen={key: str(arrays["chosen"][i, k]) for k, key in enumerate(chosen_keys)},
                synthetic=synthetic,
                lattice={},
                train_history=arrays["train_history"][i].tolist(),
                n_weights=int(arrays["n_weights"][i]),
                lm_loaded=bool(arrays["lm_loaded"][i]),
            )
        )

    def boundary(prefix: str) -> Boundary:
        return Boundary.from_arrays(
            {key.removeprefix(f"{prefix}/"): value for key, value in arrays.items() if key.startswith(f"{prefix}/")}
        )

    side = {name: boundary(f"side_{name}") for name in SIDE_METHODS}
    return Reference(results, boundary("tails"), boundary("tails_flat"), side)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["glvq_results"].load())
