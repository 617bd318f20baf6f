"""Convolution / pooling / batch-norm micro-benchmarks, ember vs torch side by side.

    python benchmarks/conv.py [filter]

Rows: conv2d forward and forward+backward (MNIST-CNN shapes, a ResNet 3x3 64->64 56x56
batch-8 shape, a strided ResNet stem), max_pool2d, avg_pool2d and batch_norm2d (training
mode), forward and forward+backward. Prints best-of times and the ratio ember/torch
(lower is better). Set OPENBLAS_NUM_THREADS to compare thread counts.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import bench, fmt_time, machine  # noqa: E402

import ember  # noqa: E402

try:
    import torch
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count() or 1))
except ImportError:
    torch = None




def case_conv(xshape, wshape, **kw):
    def build(lib, rng, grad):
        x = rng.standard_normal(xshape).astype(np.float32)
        w = (rng.standard_normal(wshape) * 0.1).astype(np.float32)
        b = rng.standard_normal(wshape[0]).astype(np.float32)
        T = lib.from_numpy
        x, w, b = T(x), T(w), T(b)
        if grad:
            x.requires_grad_(True)
            w.requires_grad_(True)
            b.requires_grad_(True)
        F = lib.nn.functional
        return lambda: F.conv2d(x, w, b, **kw), (x, w, b)
    return build


def case_maxpool(xshape, k, s=None, p=0):
    def build(lib, rng, grad):
        x = lib.from_numpy(rng.standard_normal(xshape).astype(np.float32))
        if grad:
            x.requires_grad_(True)
        return lambda: lib.nn.functional.max_pool2d(x, k, s, p), (x,)
    return build


def case_avgpool(xshape, k, s=None):
    def build(lib, rng, grad):
        x = lib.from_numpy(rng.standard_normal(xshape).astype(np.float32))
        if grad:
            x.requires_grad_(True)
        return lambda: lib.nn.functional.avg_pool2d(x, k, s), (x,)
    return build


def case_bn(xshape):
    def build(lib, rng, grad):
        C = xshape[1]
        x = lib.from_numpy(rng.standard_normal(xshape).astype(np.float32))
        w = lib.from_numpy(rng.standard_normal(C).astype(np.float32))
        b = lib.from_numpy(rng.standard_normal(C).astype(np.float32))
        rm, rv = lib.zeros(C), lib.ones(C)
        if grad:
            for t in (x, w, b):
                t.requires_grad_(True)
        F = lib.nn.functional
        return lambda: F.batch_norm(x, rm, rv, w, b, training=True), (x, w, b)
    return build


CASES = [
    ("conv2d 64x1x28x28 -> 32, 3x3 p1", case_conv((64, 1, 28, 28), (32, 1, 3, 3), padding=1)),
    ("conv2d 64x32x14x14 -> 64, 3x3 p1", case_conv((64, 32, 14, 14), (64, 32, 3, 3),
                                                   padding=1)),
    ("conv2d 64x32x28x28 -> 64, 3x3 p1", case_conv((64, 32, 28, 28), (64, 32, 3, 3),
                                                   padding=1)),
    ("conv2d 8x64x56x56 -> 64, 3x3 p1", case_conv((8, 64, 56, 56), (64, 64, 3, 3), padding=1)),
    ("conv2d 8x3x224x224 -> 64, 7x7 s2 p3", case_conv((8, 3, 224, 224), (64, 3, 7, 7),
                                                      stride=2, padding=3)),
    ("max_pool2d 64x32x28x28 k2", case_maxpool((64, 32, 28, 28), 2)),
    ("max_pool2d 8x64x112x112 k3 s2 p1", case_maxpool((8, 64, 112, 112), 3, 2, 1)),
    ("avg_pool2d 64x32x28x28 k2", case_avgpool((64, 32, 28, 28), 2)),
    ("batch_norm2d 64x32x28x28 (train)", case_bn((64, 32, 28, 28))),
    ("batch_norm2d 8x64x56x56 (train)", case_bn((8, 64, 56, 56))),
]


def time_case(lib, build, grad):
    rng = np.random.default_rng(0)
    fn, leaves = build(lib, rng, grad)
    if not grad:
        with lib.no_grad():
            fn()
        ctx = lib.no_grad

        def step():
            with ctx():
                fn()
        return bench(step, min_time=0.3, repeat=3, warmup=1)
    out = fn()
    gy = lib.from_numpy(np.random.default_rng(1).standard_normal(
        tuple(out.shape)).astype(np.float32))

    def step():
        for t in leaves:
            t.grad = None
        fn().backward(gy)
    return bench(step, min_time=0.3, repeat=3, warmup=1)


def main(argv):
    filt = argv[0] if argv else ""
    print(f"# conv / pool / batch-norm, ember vs torch\nmachine: {machine()}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
          + (f"; torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else ""))
    print(f"{'case':<40} {'pass':<8} {'ember':>11} {'torch':>11}  {'ratio':>7}")
    for title, build in CASES:
        if filt not in title:
            continue
        for grad in (False, True):
            te = time_case(ember, build, grad)
            tt = time_case(torch, build, grad) if torch is not None else None
            ratio = f"{te / tt:6.2f}x" if tt else "   -   "
            print(f"{title:<40} {'fwd+bwd' if grad else 'fwd':<8} {fmt_time(te)} "
                  f"{fmt_time(tt) if tt else '':>11}  {ratio}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
