"""Profiler overhead on small ops, ember vs torch.

    python benchmarks/profiler.py

Three runs of each workload: before the profiler module is imported, after it was used
(no profiler active: the dispatcher's only cost is its empty mode-stack check), and inside
``profiler.profile(record_shapes=True)``. Prints times and the ratio active/inactive (the
issue's target: under 3x on the small-op benchmark; inactive: nothing measurable).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import cpus, bench, fmt_time, machine  # noqa: E402

import ember  # noqa: E402

try:
    import torch
    torch.set_num_threads(cpus())
except ImportError:
    torch = None


def workloads(lib):
    rng = np.random.default_rng(0)
    a, b = (lib.tensor(rng.standard_normal((4, 4)).astype(np.float32)) for _ in range(2))
    w = lib.tensor(rng.standard_normal((16, 16)), requires_grad=True)
    x = lib.tensor(rng.standard_normal((16, 16)))

    def add():
        return a + b

    def mul_exp_sum_backward():
        (w * x).exp().sum().backward()
    return {"add 4x4": add, "mul-exp-sum fwd+bwd 16x16": mul_exp_sum_backward}


def measure(lib):
    rows = {}
    for name, fn in workloads(lib).items():
        before = bench(fn, min_time=0.5, repeat=5)
        rows[name] = [before]
    lib.profiler.profile                     # noqa: B018  (imports the module)
    with lib.profiler.profile(record_shapes=True):
        pass
    for name, fn in workloads(lib).items():
        rows[name].append(bench(fn, min_time=0.5, repeat=5))
        with lib.profiler.profile(record_shapes=True):
            rows[name].append(bench(fn, min_time=0.5, repeat=5))
    return rows


def main():
    print(f"# profiler overhead on small ops\nmachine: {machine()}"
          + (f"; torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else ""))
    libs = [("ember", ember)] + ([("torch", torch)] if torch else [])
    print(f"{'lib':<6} {'workload':<28} {'no profiler':>11} {'after use':>11} "
          f"{'profiling':>11} {'active/off':>10}")
    for lname, lib in libs:
        for name, (before, after, active) in measure(lib).items():
            print(f"{lname:<6} {name:<28} {fmt_time(before)} {fmt_time(after)} "
                  f"{fmt_time(active)} {active / after:9.2f}x", flush=True)


if __name__ == "__main__":
    main()
