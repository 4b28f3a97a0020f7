"""The environment a run's numbers come from: versions, CPU, threads and device."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .devices import device

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # code/, inside a checkout the repository is its parent

#: Variables that change which floating-point kernels torch and MKL pick: another CPU, simulated.
NUMERICS_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR")
#: Perturbed numerical environments the book is checked under (README, "Any machine"): set each in the
#: shell before Python starts (torch reads them when it loads).
PERTURBED_NUMERICS = {
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}


def numerics() -> str:
    """The numerical environment this process runs in: 'native', or the perturbing variables set."""
    found = [f"{name}={os.environ[name]}" for name in NUMERICS_VARIABLES if os.environ.get(name)]
    return " ".join(found) or "native"


def git_commit() -> str | None:
    """The git commit of the checkout the package runs from (with '+dirty' for local changes), or None."""
    repo = _PACKAGE_ROOT.parent
    if not (repo / ".git").exists():
        return None
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else what `platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def environment() -> dict[str, Any]:
    """Versions, CPU, its kernels, cores, torch threads and device: the JSON's `environment` block."""
    try:
        version = metadata.version("toyscale")
    except metadata.PackageNotFoundError:
        version = "unknown"
    on = device()
    return {
        "toyscale": version,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "numerics": numerics(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(on) if on.type == "cpu" else f"{on} ({torch.cuda.get_device_name(on)})",
    }
