"""Memory saved for backward under CPU autocast (bfloat16) vs float32, ember and torch.

For an MLP and a small CNN, runs one forward pass with ``requires_grad`` parameters and
sums the bytes of every tensor the autograd graph saves for backward (collected with
``saved_tensors_hooks``, counting each underlying buffer once and leaving out the model's
own parameters and their low-precision copies: activations only). Also reports the profiler's view (ember: ``profile_memory=True``, bytes
allocated by the forward) and the forward time.

    python benchmarks/amp.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from common import bench, fmt_time, machine  # noqa: E402

try:
    import torch
except ImportError:                     # the comparison is optional
    torch = None


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                         nn.BatchNorm2d(64), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 8 * 8, 10))


CASES = [("MLP 784-512-512-10, batch 256", _mlp, (256, 784)),
         ("CNN 2x(conv-BN-ReLU-avgpool), 32x32, batch 64", _cnn, (64, 3, 32, 32))]


# ------------------------------------------------------------------ ember
def _e_root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def ember_saved_bytes(model, x, amp):
    params = {id(_e_root(p._data)) for p in model.parameters()}
    pshapes = {s for p in model.parameters() for s in (tuple(p.shape), tuple(p.shape)[::-1])}
    seen = {}

    def pack(t):
        r = _e_root(t._data)
        # leave out the parameters and their low-precision copies (same or transposed shape)
        if id(r) not in params and tuple(t.shape) not in pshapes:
            seen[id(r)] = r.nbytes
        return t

    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with ember.autocast(device_type="cpu", dtype=ember.bfloat16, enabled=amp):
            out = model(x)
    del out
    return sum(seen.values())


def ember_profiled_bytes(model, x, amp):
    with ember.autograd.profiler.profile(profile_memory=True) as p:
        with ember.autocast(device_type="cpu", dtype=ember.bfloat16, enabled=amp):
            out = model(x)
        del out
    evs = [e for e in p.function_events if e.cpu_parent is None and e.name != "[memory]"]
    return sum(max(e.cpu_memory_usage, 0) for e in evs if e.name.startswith("aten::"))


def ember_time(model, x, amp):
    def f():
        with ember.autocast(device_type="cpu", dtype=ember.bfloat16, enabled=amp):
            model(x).sum().backward()
    return bench(f, min_time=0.5, repeat=3, warmup=1)


# ------------------------------------------------------------------ torch
def torch_saved_bytes(model, x, amp):
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    pshapes = {s for p in model.parameters() for s in (tuple(p.shape), tuple(p.shape)[::-1])}
    seen = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in params and tuple(t.shape) not in pshapes:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=amp):
            out = model(x)
    del out
    return sum(seen.values())


def torch_time(model, x, amp):
    def f():
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=amp):
            model(x).sum().backward()
    return bench(f, min_time=0.5, repeat=3, warmup=1)


def _mb(n):
    return f"{n / 2 ** 20:.2f} MB"


def main():
    print(f"# {machine()}")
    if torch is not None:
        torch.set_num_threads(2)
        print(f"# torch {torch.__version__}")
    rows = []
    for name, make, shape in CASES:
        ember.manual_seed(0)
        em = make(ember.nn)
        ex = ember.randn(*shape)
        e32, e16 = ember_saved_bytes(em, ex, False), ember_saved_bytes(em, ex, True)
        p32, p16 = ember_profiled_bytes(em, ex, False), ember_profiled_bytes(em, ex, True)
        et32, et16 = ember_time(em, ex, False), ember_time(em, ex, True)
        r = dict(name=name, e32=e32, e16=e16, p32=p32, p16=p16, et32=et32, et16=et16)
        if torch is not None:
            tm = make(torch.nn)
            tx = torch.from_numpy(ex.numpy().copy())
            r.update(t32=torch_saved_bytes(tm, tx, False), t16=torch_saved_bytes(tm, tx, True),
                     tt32=torch_time(tm, tx, False), tt16=torch_time(tm, tx, True))
        rows.append(r)

    print("\nBytes saved for backward (one forward pass, parameters and their bf16 copies excluded)")
    print(f"{'model':45s} {'ember f32':>11s} {'ember bf16':>11s} {'ratio':>6s}"
          f" {'torch f32':>11s} {'torch bf16':>11s} {'ratio':>6s}")
    for r in rows:
        line = (f"{r['name']:45s} {_mb(r['e32']):>11s} {_mb(r['e16']):>11s}"
                f" {r['e16'] / r['e32']:6.2f}")
        if "t32" in r:
            line += (f" {_mb(r['t32']):>11s} {_mb(r['t16']):>11s}"
                     f" {r['t16'] / r['t32']:6.2f}")
        print(line)
    print("\nember profiler (profile_memory=True): bytes allocated by top-level forward ops")
    for r in rows:
        print(f"{r['name']:45s} f32 {_mb(r['p32']):>11s}  bf16 {_mb(r['p16']):>11s}"
              f"  ratio {r['p16'] / r['p32']:.2f}")
    print("\nforward + backward time")
    for r in rows:
        line = f"{r['name']:45s} ember f32 {fmt_time(r['et32'])} bf16 {fmt_time(r['et16'])}"
        if "tt32" in r:
            line += f" | torch f32 {fmt_time(r['tt32'])} bf16 {fmt_time(r['tt16'])}"
        print(line)


if __name__ == "__main__":
    main()
