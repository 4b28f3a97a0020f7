"""GLVQ's figures and tables: the warm-up at equal total bits, one 2-D lattice, the LM's size–quality
trade-off, and the attribution table of every arm at 2 bits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from toyscale.core import Table, plot
from toyscale.core.table import mean_std

from .experiment import MAIN_ARMS, Result, arm_bits
from .quantize import ARMS
from .synthetic import SYNTHETIC_ARMS

ARM_LABELS = {
    "rtn": "RTN, uniform bits",
    "gptq": "GPTQ, uniform bits",
    "glvq_init_uniform": "GLVQ lattice at its Cholesky start, uniform bits",
    "glvq_uniform": "GLVQ, uniform bits",
    "rtn_sb": "RTN + salience bits",
    "gptq_sb": "GPTQ + salience bits",
    "glvq_init": "GLVQ lattice at its Cholesky start + salience bits",
    "glvq_shared": "GLVQ, one lattice shared per layer",
    "glvq_no_compand": "GLVQ, no companding (μ → 0)",
    "glvq_global_mu": "GLVQ, one global μ per matrix (the paper's ablation)",
    "rtn_sb_nominal": "RTN + salience bits at nominal index bits (no top-up)",
    "glvq_mu_free": "GLVQ with μ free down to 0 (a departure from the paper)",
    "glvq": "GLVQ (learned lattices, companding, salience bits)",
    "best_scalar": "strongest scalar grid (chosen on validation)",
    "pca_rtn": "PCA + RTN",
    "white_rtn": "Cholesky-whitened RTN",
}


def _colors() -> dict[str, str]:
    return plot.colors(list(ARM_LABELS), method="glvq")


def fig_synthetic(result: Result) -> go.Figure:
    """SQNR against total bits per coordinate on the structured groups (solid) and the Gaussian control (dotted).

    Each scalar grid is drawn through its b- and (b + 1)-bit points: the chord GLVQ is compared on.
    """
    colors = _colors()
    fig = plot.figure(
        "The warm-up at equal total bits: GLVQ against the chords of the scalar grids",
        "total bits per coordinate (index bits + side information)",
        "SQNR (dB)",
    )
    for kind, dash, suffix in (
        ("structured", "solid", ", structured groups"),
        ("gaussian", "dot", ", i.i.d. Gaussian"),
    ):
        for arm in SYNTHETIC_ARMS:
            point = result.synthetic[kind][arm]
            fig.add_trace(
                go.Scatter(
                    x=point["rate"],
                    y=point["sqnr"],
                    mode="lines+markers",
                    name=("GLVQ" if arm == "glvq" else ARM_LABELS[arm]) + suffix,
                    line=dict(color=colors[arm], dash=dash, width=3 if arm == "glvq" else 2),
                    marker=dict(size=11 if arm == "glvq" else 7, symbol="diamond" if arm == "glvq" else "circle"),
                    customdata=point["bits"],
                    hovertemplate="%{customdata} index bits: %{x:.3f} bits, %{y:.2f} dB<extra>%{fullData.name}</extra>",
                )
            )
    return fig


def fig_tradeoff(result: Result) -> go.Figure:
    """Test bits per character against charged bits per weight: the main arms at every width, the rest at 2 bits."""
    colors = _colors()
    fig = plot.figure(
        "Every arm at the same charged size: test bits per character against bits per weight",
        "charged bits per weight (indices + side information at the paper's share)",
        "test bits per character",
    )
    for arm in (*ARMS, "best_scalar"):
        if arm not in result.metrics or arm == "best_scalar":
            continue
        bits = [b for b in arm_bits(result.config, arm) if f"bpc@{b}" in result.metrics[arm]]
        main = arm in MAIN_ARMS
        fig.add_trace(
            go.Scatter(
                x=[result.metrics[arm][f"cbpw@{b}"] for b in bits],
                y=[result.metrics[arm][f"bpc@{b}"] for b in bits],
                mode="lines+markers" if len(bits) > 1 else "markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], width=3 if arm == "glvq" else 2),
                marker=dict(size=11 if arm == "glvq" else 8, symbol="circle" if main else "x"),
                customdata=[[b] for b in bits],
                hovertemplate="%{customdata[0]} bits nominal: %{x:.3f} bpw, %{y:.3f} bpc"
                "<extra>%{fullData.name}</extra>",
            )
        )
    fp = result.metrics["fp"]["bpc"]
    xs = [m[k] for m in result.metrics.values() for k in m if k.startswith("cbpw@")]
    fig.add_trace(
        go.Scatter(
            x=[min(xs), max(xs)],
            y=[fp, fp],
            mode="lines",
            name="unquantized (fp16 weights)",
            line=dict(color=plot.ORACLE_COLOR, dash="dash"),
        )
    )
    return fig


def fig_lattice(result: Result) -> go.Figure:
    """One 2-D group: its vectors, RTN's square grid and GLVQ's learned (companded) lattice at 2 bits."""
    colors = _colors()
    lat = result.lattice
    fig = plot.figure(
        "One group in 2-D: RTN's square grid and GLVQ's learned, companded lattice",
        "first coordinate",
        "second coordinate",
    )
    points = np.asarray(lat["points"])
    fig.add_trace(
        go.Scatter(
            x=points[:, 0],
            y=points[:, 1],
            mode="markers",
            name="weights of the group",
            marker=dict(color="#BBBBBB", size=4),
        )
    )
    for key, arm, symbol, sqnr in (
        ("rtn_codebook", "rtn", "square", "rtn_sqnr"),
        ("glvq_codebook", "glvq", "diamond", "glvq_sqnr"),
    ):
        book = np.asarray(lat[key])
        label = "RTN" if arm == "rtn" else "GLVQ"
        fig.add_trace(
            go.Scatter(
                x=book[:, 0],
                y=book[:, 1],
                mode="markers",
                name=f"{label} codebook, SQNR {lat[sqnr][0]:.2f} dB (index bits only)",
                marker=dict(color=colors[arm], size=10, symbol=symbol, line=dict(color="white", width=1)),
            )
        )
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


#: The attribution table's rows: (arm, coder, lattice, salience bits).
ATTRIBUTION = (
    ("rtn", "RTN", "scalar grid", "no"),
    ("gptq", "GPTQ", "scalar grid", "no"),
    ("glvq_init_uniform", "GLVQ", "Cholesky start", "no"),
    ("glvq_uniform", "GLVQ", "learned", "no"),
    ("rtn_sb", "RTN", "scalar grid", "yes"),
    ("gptq_sb", "GPTQ", "scalar grid", "yes"),
    ("glvq_init", "GLVQ", "Cholesky start", "yes"),
    ("glvq_shared", "GLVQ", "learned, one per layer", "yes"),
    ("glvq_no_compand", "GLVQ", "learned, μ → 0", "yes"),
    ("glvq_global_mu", "GLVQ", "learned, one global μ", "yes"),
    ("rtn_sb_nominal", "RTN", "(scalar grid), nominal index bits", "yes"),
    ("glvq_mu_free", "GLVQ", "learned, μ free (departure)", "yes"),
    ("glvq", "GLVQ", "learned", "yes"),
)


def attribution_table(results: Sequence[Result], bits: int = 2) -> Table:
    """Every arm at `bits` nominal and the same true size: test bpc (mean ± sd over seeds) and bits per weight."""
    rows = []
    fp, _ = mean_std([r.metrics["fp"]["bpc"] for r in results])
    for arm, coder, lattice, salience in ATTRIBUTION:
        if any(f"bpc@{bits}" not in r.metrics.get(arm, {}) for r in results):
            continue
        mean, sd = mean_std([r.metrics[arm][f"bpc@{bits}"] for r in results])
        bpw, _ = mean_std([r.metrics[arm][f"bpw@{bits}"] for r in results])
        charged, _ = mean_std([r.metrics[arm][f"cbpw@{bits}"] for r in results])
        rows.append([arm, coder, lattice, salience, f"{mean:.3f} ± {sd:.3f}", mean - fp, charged, bpw])
    seeds = [r.seed for r in results]
    return Table(
        ["arm", "coder", "lattice", "salience bits", "test bpc", "above fp16", "charged bpw", "true bpw"],
        rows,
        f"{bits} bits nominal, every arm at the full GLVQ's charged size (per-group side information at the "
        f"paper's share) but RTN at nominal index bits; seeds {seeds[0]}–{seeds[-1]}",
    )


def fig_attribution(results: Sequence[Result], bits: int = 2) -> go.Figure:
    """The attribution table as bars: mean test bpc ± sd per arm, without and with salience bits."""
    colors = _colors()
    fig = plot.figure(
        f"What carries the effect at {bits} bits: each idea on its own, at the same true size",
        "arm",
        "test bits per character (lower is better)",
    )
    arms = [a for a, *_ in ATTRIBUTION if all(f"bpc@{bits}" in r.metrics.get(a, {}) for r in results)]
    values = np.array([[r.metrics[a][f"bpc@{bits}"] for r in results] for a in arms])
    fig.add_trace(
        go.Bar(
            x=[ARM_LABELS[a] for a in arms],
            y=values.mean(axis=1),
            error_y=dict(type="data", array=values.std(axis=1, ddof=1) if values.shape[1] > 1 else None),
            marker_color=[colors[a] for a in arms],
            hovertemplate="%{x}: %{y:.3f} bpc<extra></extra>",
            showlegend=False,
        )
    )
    fp = float(np.mean([r.metrics["fp"]["bpc"] for r in results]))
    fig.add_hline(y=fp, line=dict(color=plot.ORACLE_COLOR, dash="dash"), annotation_text="fp16")
    fig.update_yaxes(range=[fp - 0.2, float(values.max()) + 0.1])
    return fig
