"""TorchScript: scripted vs eager, ember and torch side by side in one run.

    python benchmarks/jit.py

Cases (inference, ``no_grad``; batch 1, where per-op overhead dominates):
  - an LSTM cell written out in ops, unrolled over 50 steps (hidden 64),
  - an MLP 64-128-128-10 at batch 1,
and the time to ``jit.script`` a ResNet-18 (ember.vision / torchvision layers).
Ratios: scripted ember / eager ember (target <= 0.6) and scripted ember / scripted torch
(target <= 1).
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from common import bench_interleaved, fmt_time, machine  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def lstm_module(lib, hidden=64, inputs=64):
    nn = lib.nn

    class LSTMLoop(nn.Module):
        def __init__(self):
            super().__init__()
            self.w_ih = nn.Parameter(lib.randn(4 * hidden, inputs) * 0.1)
            self.w_hh = nn.Parameter(lib.randn(4 * hidden, hidden) * 0.1)
            self.b_ih = nn.Parameter(lib.zeros(4 * hidden))
            self.b_hh = nn.Parameter(lib.zeros(4 * hidden))

        def forward(self, xs, h, c):
            for t in range(xs.size(0)):
                gates = lib.mm(xs[t], self.w_ih.t()) + self.b_ih + lib.mm(h, self.w_hh.t()) + self.b_hh
                i, f, g, o = gates.chunk(4, 1)
                i = lib.sigmoid(i)
                f = lib.sigmoid(f)
                g = lib.tanh(g)
                o = lib.sigmoid(o)
                c = f * c + i * g
                h = o * lib.tanh(c)
            return h, c
    return LSTMLoop()


_SRC_TEMPLATE = None


def _build(lib, which):
    """Define the module class in a real file so that ``jit.script`` can read its source."""
    return lstm_module(lib) if which == "lstm" else lib.nn.Sequential(
        lib.nn.Linear(64, 128), lib.nn.ReLU(), lib.nn.Linear(128, 128), lib.nn.ReLU(),
        lib.nn.Linear(128, 10))


def _inputs(lib, which):
    rs = np.random.RandomState(0)
    if which == "lstm":
        return (lib.from_numpy(rs.randn(50, 1, 64).astype(np.float32)),
                lib.zeros(1, 64), lib.zeros(1, 64))
    return (lib.from_numpy(rs.randn(1, 64).astype(np.float32)),)


def case(which):
    fns, outs = {}, {}
    for name, lib in (("ember", ember), ("torch", torch)):
        if lib is None:
            continue
        lib.manual_seed(0)
        model = _build(lib, which).eval()
        scripted = lib.jit.script(model)
        args = _inputs(lib, which)

        def eager(model=model, args=args, lib=lib):
            with lib.no_grad():
                return model(*args)

        def script(scripted=scripted, args=args, lib=lib):
            with lib.no_grad():
                return scripted(*args)
        fns[f"{name} eager"] = eager
        fns[f"{name} script"] = script
        a, b = eager(), script()
        a = a[0] if isinstance(a, tuple) else a
        b = b[0] if isinstance(b, tuple) else b
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5), name
    return bench_interleaved(fns, min_time=0.3, repeat=5)


def compile_time(lib, build):
    best = float("inf")
    for _ in range(3):
        model = build()
        t0 = time.perf_counter()
        lib.jit.script(model)
        best = min(best, time.perf_counter() - t0)
    return best


def _torchvision():
    """torchvision beside the CPU torch wheel: its C++ ops cannot load, so their schemas are
    defined first (the pure-Python models import); see tests/helpers.import_torchvision."""
    try:
        import torchvision
        return torchvision
    except RuntimeError:
        pass
    for k in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[k]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        try:
            lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:
            pass
    _torchvision.lib = lib
    import torchvision
    return torchvision


def main():
    print(machine())
    print(f"\n{'case':<40} {'eager':>11} {'script':>11} {'script/eager':>13} {'vs torch script':>16}")
    for which, title in (("lstm", "LSTM cell x 50 steps, batch 1, h=64"),
                         ("mlp", "MLP 64-128-128-10, batch 1")):
        t = case(which)
        for lib in ("ember", "torch"):
            if f"{lib} eager" not in t:
                continue
            e, s = t[f"{lib} eager"], t[f"{lib} script"]
            vs = f"{s / t['torch script']:15.2f}x" if lib == "ember" and "torch script" in t else ""
            print(f"{title + ' [' + lib + ']':<40} {fmt_time(e)} {fmt_time(s)} {s / e:12.2f}x {vs}")
    from ember.vision.models import resnet18 as e_resnet
    ce = compile_time(ember, lambda: e_resnet())
    line = f"\n{'jit.script(resnet18) compile time':<40} ember {fmt_time(ce)}"
    try:
        torchvision = _torchvision()
        ct = compile_time(torch, lambda: torchvision.models.resnet18())
        line += f"   torch {fmt_time(ct)}   ratio {ce / ct:.2f}x"
    except Exception as e:   # noqa: BLE001 - torchvision is optional here
        line += f"   (torch: {type(e).__name__})"
    print(line)


if __name__ == "__main__":
    main()
