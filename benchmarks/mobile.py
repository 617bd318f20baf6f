"""The lite runtime: size on disk and import time (full runtime and a MobileNetV2 selective
build), and MobileNetV2 inference at 1x3x64x64 in ember.lite beside ember eager, ember's
optimize_for_mobile module and torch's lite interpreter (the same .ptl).

Import time is measured in a fresh interpreter (``python -X importtime`` is not used:
the figure is wall time of ``import ember_lite`` after NumPy is already imported, best of
five processes), so it is the runtime's own cost.

    python benchmarks/mobile.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from common import bench_interleaved, fmt_time, machine  # noqa: E402
from ember.lite import build as lite_build  # noqa: E402
from ember.utils.mobile_optimizer import optimize_for_mobile  # noqa: E402
from ember.vision.models import mobilenet_v2  # noqa: E402

try:
    import torch
    from torch.jit.mobile import _load_for_lite_interpreter as torch_lite_load
except ImportError:                     # the comparison is optional
    torch = None

IMPORT = ("import sys, time; sys.path.insert(0, {path!r}); import numpy; "
          "t = time.perf_counter(); import ember_lite; print(time.perf_counter() - t)")


def folder_size(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files if "__pycache__" not in d)


def import_time(parent):
    """Best of five fresh processes (the first compiles .pyc files and is not counted)."""
    times = []
    for _ in range(6):
        out = subprocess.run([sys.executable, "-c", IMPORT.format(path=parent)],
                             capture_output=True, text=True, check=True)
        times.append(float(out.stdout))
    return min(times[1:])


def main():
    print(f"# ember.lite — {machine()}\n")
    ember.manual_seed(0)
    model = mobilenet_v2().eval()
    scripted = ember.jit.script(model)
    tmp = tempfile.mkdtemp()
    try:
        ptl = os.path.join(tmp, "mnv2.ptl")
        scripted._save_for_lite_interpreter(ptl)
        full = os.path.join(tmp, "full")
        shutil.copytree(os.path.join(ROOT, "ember", "lite"), os.path.join(full, "ember_lite"),
                        ignore=shutil.ignore_patterns("__pycache__", "build.py"))
        sel = os.path.join(tmp, "sel")
        lite_build.build(ember.jit.export_opnames(scripted), sel)
        print("| runtime | operators | size on disk | import time |")
        print("|---|---|---|---|")
        for name, parent in (("full ember.lite", full), ("MobileNetV2 selective build", sel)):
            sys.path.insert(0, parent)
            n_ops = len(__import__("ember_lite").KERNELS)
            sys.path.remove(parent)
            sys.modules.pop("ember_lite", None)
            for k in [k for k in sys.modules if k.startswith("ember_lite.")]:
                sys.modules.pop(k)
            size = folder_size(os.path.join(parent, "ember_lite"))
            print(f"| {name} | {n_ops} | {size / 1024:.1f} KB | {import_time(parent) * 1e3:.1f} ms |")

        from ember import lite
        x = np.random.RandomState(0).randn(1, 3, 64, 64).astype(np.float32)
        xe = ember.from_numpy(x)
        lm = lite.load(ptl)
        optimized = optimize_for_mobile(scripted)
        opt_ptl = os.path.join(tmp, "mnv2_opt.ptl")
        optimized._save_for_lite_interpreter(opt_ptl)
        lo = lite.load(opt_ptl)
        fns = {"ember.lite (.ptl)": lambda: lm(x),
               "ember.lite (optimize_for_mobile .ptl)": lambda: lo(x),
               "ember eager": lambda: model(xe),
               "ember optimize_for_mobile": lambda: optimized(xe)}
        if torch is not None:
            tm, to = torch_lite_load(ptl), torch_lite_load(opt_ptl)
            xt = torch.from_numpy(x)
            torch.set_num_threads(1)
            fns["torch lite interpreter (.ptl, 1 thread)"] = lambda: tm(xt)
            fns["torch lite interpreter (optimized .ptl, 1 thread)"] = lambda: to(xt)
        with ember.no_grad():
            times = bench_interleaved(fns, min_time=0.3, repeat=5)
        print("\n| MobileNetV2 1x3x64x64 | time per inference |")
        print("|---|---|")
        for name, t in times.items():
            print(f"| {name} | {fmt_time(t).strip()} |")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
