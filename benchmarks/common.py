"""Timing helpers shared by the benchmarks: best-of-N wall time, side by side."""
from __future__ import annotations

import gc
import time


def _sized_loop(fn, min_time, repeat, warmup):
    """After ``warmup`` calls: the loop length n whose run takes ``min_time / repeat``, and
    the per-call time of that first run."""
    for _ in range(warmup):
        fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeat or n >= 1 << 20:
            return n, dt / n
        n *= 4


def bench(fn, *, min_time=0.2, repeat=5, warmup=2):
    """Best per-call time in seconds over ``repeat`` runs of an auto-sized loop."""
    n, best = _sized_loop(fn, min_time, repeat, warmup)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat - 1):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n)
    finally:
        if gc_was:
            gc.enable()
    return best


_SETTLE_S = 0.3     # BLAS/OpenMP worker threads spin-wait ~0.1 s after a call, then sleep


def bench_interleaved(fns, *, min_time=0.2, repeat=5, warmup=2):
    """Best per-call time in seconds of each function in ``fns`` (a dict), measured in
    alternating blocks: each round times every function once, so a slow phase of a noisy
    host hits all of them instead of whichever happened to run then. Between blocks the
    process sleeps briefly, so the previous library's spinning worker threads (OpenBLAS,
    OpenMP) have gone idle and do not steal the cores from the next. Returns a dict."""
    sizes = {name: _sized_loop(fn, min_time, repeat, warmup) for name, fn in fns.items()}
    best = {name: per for name, (n, per) in sizes.items()}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat - 1):
            for name, fn in fns.items():
                n = sizes[name][0]
                time.sleep(_SETTLE_S)
                fn()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - t0) / n)
    finally:
        if gc_was:
            gc.enable()
    return best


def fmt_time(s):
    if s < 1e-3:
        return f"{s * 1e6:8.2f} µs"
    if s < 1:
        return f"{s * 1e3:8.2f} ms"
    return f"{s:8.2f} s "


def machine():
    import os
    import platform
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
