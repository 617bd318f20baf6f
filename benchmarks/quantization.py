"""int8 inference: ember's quantized kernels vs torch's quantized engine (x86) vs ember float.

    python benchmarks/quantization.py [--quick] [--profile] [--repeat N] [--cpu-time]

Cases (inference, ``no_grad``), each model quantized the same way in both libraries from the
same float weights: eager post-training static quantization (QuantStub/DeQuantStub, fused
conv-BN-ReLU, ``get_default_qconfig('x86')``, calibration on random data, ``convert``):
  - the digits CNN of examples/train_digits.py, batch 64 of 1x8x8 images,
  - MobileNetV2 (random weights, torchvision's quantizable layout), batch 1 at 3x224x224.
The libraries are timed in alternating blocks with a settle pause between them
(benchmarks/common.bench_interleaved). With numba installed (the ``fast`` extra) ember's int8
model also runs with its compiled kernels off (``EMBER_NO_NUMBA=1`` turns them off for the
whole run). Ratios: ember int8 / torch int8 (target <= 2) and
ember int8 / ember float (target < 1 for the CNN). The share of output integers equal to
torch's is printed as a check (torch's engine runs ember's converted state_dict, loaded
through ember.save / torch.load). Set OPENBLAS_NUM_THREADS to compare thread counts (torch
and ember's onnxruntime GEMMs then use as many); ``--profile`` prints where ember's int8
inference spends its time.
"""
from __future__ import annotations

import argparse
import copy
import io
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember._kernels import compiled  # noqa: E402
from common import bench_interleaved, fmt_time, machine  # noqa: E402

try:
    import torch
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count() or 1))
except ImportError:
    torch = None

warnings.filterwarnings("ignore", message="torch.quantize_per_tensor")
warnings.filterwarnings("ignore", message=".*TypedStorage is deprecated")
# torch's (and ember's matching) deprecation and observer notices during prepare/convert
for _notice in (".*torch.ao.quantization is deprecated", "Please use quant_min and quant_max",
                "must run observer before calling calculate_qparams"):
    warnings.filterwarnings("ignore", message=_notice)


def digits_cnn(lib, width=32):
    """examples/train_digits.DigitsCNN, built with ``lib`` (ember or torch)."""
    nn = lib.nn
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                      nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
                      nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(2 * width * 2 * 2, 10)))


DIGITS_FUSE = [["0.0", "0.1", "0.2"], ["0.4", "0.5", "0.6"]]


def _copy_weights(src, dst):
    """torch module ``src``'s state into the ember module ``dst`` (BN statistics too)."""
    dst.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                         for k, v in src.state_dict().items()})


def _randomize_bn(model, seed):
    """Non-trivial BatchNorm statistics, so that folding them matters."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def quantize(lib, model, fuse, batches):
    """Eager static PTQ of ``model`` (a copy) with ``lib``'s ao.quantization."""
    tq = lib.ao.quantization
    lib.backends.quantized.engine = "x86"
    model = copy.deepcopy(model).eval()
    if callable(fuse):
        model = tq.QuantWrapper(model) if not hasattr(model, "quant") else model
        model.eval()
        fuse(model)
    else:
        model = tq.QuantWrapper(model).eval()
        tq.fuse_modules(model.module, fuse, inplace=True)
    model.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(model, inplace=True)
    with lib.no_grad():
        for b in batches:
            model(lib.from_numpy(b))
    tq.convert(model, inplace=True)
    return model


def _mobilenet(lib):
    if lib is ember:
        from ember.vision.models.quantization import mobilenet_v2
    else:
        from jit import _torchvision
        mobilenet_v2 = _torchvision().models.quantization.mobilenet_v2
    return mobilenet_v2()


def build(which, calib_batches):
    """{name: callable} running each variant of the case, and their outputs."""
    rng = np.random.default_rng(0)
    if which == "digits":
        shape, fuse = (64, 1, 8, 8), DIGITS_FUSE
        torch.manual_seed(0)
        t_float = digits_cnn(torch).eval()
        e_float = digits_cnn(ember).eval()
    else:
        shape, fuse = (1, 3, 224, 224), lambda m: m.fuse_model()
        torch.manual_seed(0)
        t_float = _mobilenet(torch).eval()
        e_float = _mobilenet(ember).eval()
    _randomize_bn(t_float, 1)
    _copy_weights(t_float, e_float)
    batches = [rng.random(shape, dtype=np.float32) for _ in range(calib_batches)]
    x = rng.random(shape, dtype=np.float32)
    t_int8 = quantize(torch, t_float, fuse, batches)
    e_int8 = quantize(ember, e_float, fuse, batches)
    # the observers saw float activations that differ from torch's in the last bits, so the
    # two calibrations differ slightly: run torch's engine on ember's int8 model itself
    # (its state_dict through ember.save / torch.load), so that outputs can be compared
    buf = io.BytesIO()
    ember.save(e_int8.state_dict(), buf)
    buf.seek(0)
    t_int8.load_state_dict(torch.load(buf))
    tx, ex = torch.from_numpy(x), ember.from_numpy(x)

    def run(lib, model, inp):
        def fn():
            with lib.no_grad():
                return model(inp)
        return fn
    fns = {"ember int8": run(ember, e_int8, ex), "torch int8": run(torch, t_int8, tx),
           "ember float": run(ember, e_float, ex), "torch float": run(torch, t_float, tx)}
    if compiled.enabled():      # the same model on the NumPy kernels, for comparison
        fns["ember int8 NumPy"] = _without_compiled(fns["ember int8"])
    return fns


def _without_compiled(fn):
    """``fn`` run with ember's compiled kernels off (ember/_kernels/compiled)."""
    def numpy_only():
        compiled.disable()
        try:
            return fn()
        finally:
            compiled.enable()
    return numpy_only


def bench_cpu(fns, *, min_time, repeat):
    """Best per-call process CPU time of each function in ``fns``, in alternating blocks like
    common.bench_interleaved: on a host busy with other work, time spent waiting for a core
    is not counted. Meaningful with one thread (OPENBLAS_NUM_THREADS=1): the CPU time of
    every thread of the process adds up."""
    import time
    sizes = {}
    for name, fn in fns.items():
        fn()
        n, t0 = 0, time.process_time()
        while time.process_time() - t0 < min_time / 2:
            fn()
            n += 1
        sizes[name] = max(1, n)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.process_time()
            for _ in range(sizes[name]):
                fn()
            best[name] = min(best[name], (time.process_time() - t0) / sizes[name])
    return best


def agreement(fns):
    """Share of int8 outputs (dequantized by the model's DeQuantStub) equal to torch's."""
    a = fns["ember int8"]().detach().numpy()
    b = fns["torch int8"]().detach().numpy()
    return float(np.mean(a == b)), float(np.max(np.abs(a - b)))


def hotspots(fn, n=10, top=6):
    """The functions where ``fn`` spends its time (cProfile, self time), as text lines."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    st = pstats.Stats(prof)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    total = sum(v[2] for v in st.stats.values())
    where = [os.path.relpath(k[0]) if k[0].startswith("/") else k[0] for k, _ in rows]
    return [f"    {v[2] / total * 100:5.1f}%  {w}:{k[1]}({k[2]})" for w, (k, v) in zip(where, rows)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter timing runs")
    ap.add_argument("--profile", action="store_true",
                    help="also print where ember's int8 inference spends its time")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed blocks per variant (default 5, 3 with --quick); more on a busy "
                         "host, since each variant's best block is kept")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time in process CPU time (for a busy host; with "
                         "OPENBLAS_NUM_THREADS=1)")
    args = ap.parse_args()
    if torch is None:
        raise SystemExit("this benchmark compares with torch: pip install torch")
    min_time, repeat = (0.2, 3) if args.quick else (0.5, 5)
    repeat = args.repeat or repeat
    if os.environ.get("OPENBLAS_NUM_THREADS"):     # ember's onnxruntime GEMMs too
        ember.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    print(("CPU time per call; " if args.cpu_time else "") +
          machine() + f"; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
          f", torch {torch.__version__} with {torch.get_num_threads()} threads, ember with "
          f"{ember.get_num_threads()}")
    fast = compiled.enabled()
    print(f"ember's compiled kernels (numba): {'on' if fast else 'off'}"
          + ("; 'NumPy': the same int8 model with them off, timed in the same blocks" if fast
             else ""))
    print(f"\n{'case':<34} {'ember int8':>11} {'torch int8':>11} {'ember float':>12} "
          f"{'torch float':>12} {'int8 e/t':>9} {'e int8/float':>13} {'equal out':>10}"
          + (f" {'NumPy int8':>11} {'e/t':>6}" if fast else ""))
    for which, title, calib in (("digits", "digits CNN, batch 64, 1x8x8", 8),
                                ("mobilenet", "MobileNetV2, batch 1, 3x224x224", 2)):
        fns = build(which, calib)
        same, worst = agreement(fns)
        bench = bench_cpu if args.cpu_time else bench_interleaved
        t = bench(fns, min_time=min_time, repeat=repeat)
        print(f"{title:<34} {fmt_time(t['ember int8'])} {fmt_time(t['torch int8'])} "
              f"{fmt_time(t['ember float']):>12} {fmt_time(t['torch float']):>12} "
              f"{t['ember int8'] / t['torch int8']:8.2f}x "
              f"{t['ember int8'] / t['ember float']:12.2f}x {same * 100:9.1f}%"
              + (f" {fmt_time(t['ember int8 NumPy'])} "
                 f"{t['ember int8 NumPy'] / t['torch int8']:5.2f}x" if fast else ""))
        if fast:
            same_np = np.array_equal(fns["ember int8"]().int_repr().numpy()
                                     if fns["ember int8"]().is_quantized else
                                     fns["ember int8"]().numpy(),
                                     fns["ember int8 NumPy"]().numpy())
            print(f"{'':<34} compiled kernels' outputs equal to the NumPy kernels': "
                  f"{'yes' if same_np else 'NO'}")
        if args.profile:
            print("\n".join(hotspots(fns["ember int8"])))


if __name__ == "__main__":
    main()
