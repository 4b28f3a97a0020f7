"""`python -m toyscale.llm.dcpt --build-grids SEED [SEED ...]`: train and cache the grids of these seeds.

A grid is minutes of CPU; `run(config, seed=s)` builds a missing one on demand, and this command
builds several ahead (for example the seeds of `python -m toyscale reproduce dcpt --seed-start S`).
The committed seeds are rebuilt together by `python -m toyscale data --rebuild dcpt_grid`.
"""

from __future__ import annotations

import argparse
import time

import torch

from toyscale.llm.dcpt.grid import GridConfig, build_grid, cache_path


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m toyscale.llm.dcpt", description=__doc__.splitlines()[0])
    parser.add_argument("--build-grids", type=int, nargs="+", required=True, metavar="SEED", help="grid seeds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for seed in args.build_grids:
        if cache_path(GridConfig(), seed).is_file():
            print(f"seed {seed}: already built", flush=True)
            continue
        start = time.process_time()
        path = build_grid(seed)
        print(f"seed {seed}: {path} ({time.process_time() - start:.0f} s of CPU)", flush=True)


if __name__ == "__main__":
    main()
