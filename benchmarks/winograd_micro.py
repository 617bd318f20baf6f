"""Winograd vs im2col micro-benchmark for 3x3 stride-1 pad-1 convolutions, float32.

    python benchmarks/winograd_micro.py [repeats]

Forward: ember._kernels.nn_conv.conv_forward vs winograd.conv2d_3x3 with F(2x2,3x3) and
F(4x4,3x3) forced, and the automatic pick. Weight gradient: conv_weight_grad vs
winograd.conv2d_3x3_weight_grad with F(3x3,2x2) and F(3x3,4x4) forced, and the automatic
pick. Wall times in ms, best of ``repeats`` rounds; within a round the variants of a
shape run in turn, so a burst of load from another process hits all of them alike.
"speedup" is im2col / Winograd-auto; "use" is what ``use_winograd`` says (fwd/wgrad).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ember._kernels.nn_conv as KC  # noqa: E402
from ember._kernels import winograd as WG  # noqa: E402

SHAPES = [  # N, C, O, H=W
    (64, 32, 64, 14), (64, 64, 32, 14), (64, 1, 32, 28), (8, 64, 64, 56),
    (8, 128, 128, 28), (8, 256, 256, 14), (8, 512, 512, 7), (32, 64, 64, 32),
]


def best_of_rounds(fns, reps):
    """Min wall time (ms) of each of ``fns``, run round-robin ``reps`` times (+1 warm-up)."""
    for f in fns:
        f()
    t = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            t[i] = min(t[i], time.perf_counter() - t0)
    return [v * 1e3 for v in t]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rng = np.random.default_rng(0)
    hdr = (f"{'N,C,O,HW':>14} | {'fwd im2col':>10} {'m=2':>7} {'m=4':>7} {'auto':>7} "
           f"{'speedup':>7} | {'wgrad im2col':>12} {'r=2':>7} {'r=4':>7} {'auto':>7} "
           f"{'speedup':>7} | use")
    print(hdr)
    print("-" * len(hdr))
    p, s1 = (1, 1), [1, 1]
    for N, C, O, S in SHAPES:
        x = rng.standard_normal((N, C, S, S)).astype(np.float32)
        w = rng.standard_normal((O, C, 3, 3)).astype(np.float32)
        gy = rng.standard_normal((N, O, S, S)).astype(np.float32)
        f = best_of_rounds([
            lambda: KC.conv_forward(x, w, s1, s1, s1, 1),
            lambda: WG.conv2d_3x3(x, w, p, p, m=2),
            lambda: WG.conv2d_3x3(x, w, p, p, m=4),
            lambda: WG.conv2d_3x3(x, w, p, p)], reps)
        g = best_of_rounds([
            lambda: KC.conv_weight_grad(x, gy, w.shape, s1, s1, s1, 1),
            lambda: WG.conv2d_3x3_weight_grad(x, gy, p, p, r=2),
            lambda: WG.conv2d_3x3_weight_grad(x, gy, p, p, r=4),
            lambda: WG.conv2d_3x3_weight_grad(x, gy, p, p)], reps)
        use = "/".join("y" if WG.use_winograd(N, C, O, S, S, op) else "n"
                       for op in ("forward", "weight_grad"))
        print(f"{f'{N},{C},{O},{S}':>14} | {f[0]:10.2f} {f[1]:7.2f} {f[2]:7.2f} {f[3]:7.2f} "
              f"{f[0] / f[3]:6.2f}x | {g[0]:12.2f} {g[1]:7.2f} {g[2]:7.2f} {g[3]:7.2f} "
              f"{g[0] / g[3]:6.2f}x | {use}", flush=True)


if __name__ == "__main__":
    main()
