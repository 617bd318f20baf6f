"""Distributed: ember's MPI engine beside torch's gloo, 2 processes on this machine.

    python benchmarks/distributed.py [--rounds 3] [allreduce] [ddp]

Each round starts 2 fresh processes per library (ember, then torch), one thread each, on
127.0.0.1; they rendezvous with env:// and time, on rank 0:
  * all_reduce (SUM, float32) of 4 KB, 1 MB and 64 MB: median latency and bandwidth
    (bytes / time);
  * a DistributedDataParallel training step (forward, cross-entropy, backward with bucketed
    allreduce, SGD) of the MLP (batch 128 per rank) and the digits CNN (batch 64 per rank)
    of benchmarks/training.py, same weights for both libraries.
The best of the rounds is printed with the ratio ember / torch (lower is better).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [("4 KB", 1024), ("1 MB", 256 * 1024), ("64 MB", 16 * 1024 * 1024)]


def worker(lib_name, cases):
    """One rank: time the cases, rank 0 prints a JSON line."""
    import numpy as np
    if lib_name == "torch":
        import torch as lib
    else:
        sys.path.insert(0, ROOT)
        import ember as lib
    lib.set_num_threads(1)
    dist = lib.distributed
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out = {}
    if "allreduce" in cases:
        for label, n in SIZES:
            x = lib.ones(n)
            reps = 400 if n < 10_000 else (60 if n < 1_000_000 else 6)
            for _ in range(min(reps, 20)):
                dist.all_reduce(x)
            times = []
            for _ in range(reps):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(x)
                times.append(time.perf_counter() - t0)
            out[f"allreduce {label}"] = statistics.median(times)
    if "ddp" in cases:
        sys.path.insert(0, HERE)
        from training import cnn, mlp
        lib.set_num_threads(1)          # training.py sets torch to every core on import
        for name, build, shape in (("DDP step MLP (128/rank)", mlp, (128, 784)),
                                   ("DDP step CNN (64/rank)", cnn, (64, 1, 28, 28))):
            lib.manual_seed(0)
            model = build(lib)
            with lib.no_grad():         # same weights in both libraries
                rng = np.random.default_rng(1)
                for p in model.parameters():
                    p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape))
                                           .astype(np.float32) * 0.05))
            ddp = lib.nn.parallel.DistributedDataParallel(model)
            opt = lib.optim.SGD(ddp.parameters(), lr=0.01)
            rng = np.random.default_rng(rank)
            x = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
            y = lib.from_numpy(rng.integers(0, 10, shape[0]).astype(np.int64))

            def step():
                opt.zero_grad()
                lib.nn.functional.cross_entropy(ddp(x), y).backward()
                opt.step()
            for _ in range(3):
                step()
            times = []
            for _ in range(15 if "CNN" in name else 30):
                dist.barrier()
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
            out[name] = statistics.median(times)
    dist.barrier()
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def run_pair(lib_name, cases, timeout=600):
    sys.path.insert(0, HERE)
    from common import run_ranks
    return run_ranks(__file__, [lib_name, ",".join(cases)], timeout=timeout)


def fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.1f} us"
    return f"{seconds * 1e3:8.2f} ms"


def main(argv):
    rounds = 3
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    cases = [a for a in argv if a in ("allreduce", "ddp")] or ["allreduce", "ddp"]
    sys.path.insert(0, HERE)
    from common import machine
    print(f"# distributed, 2 processes x 1 thread, ember (MPI) vs torch (gloo)\n"
          f"machine: {machine()}")
    best = {}
    for _ in range(rounds):
        for lib_name in ("ember", "torch"):
            for key, value in run_pair(lib_name, cases).items():
                best.setdefault(key, {})
                old = best[key].get(lib_name)
                best[key][lib_name] = value if old is None else min(old, value)
            time.sleep(1.0)             # let the other library's processes go quiet
    print(f"{'case':<28} {'ember':>11} {'torch':>11}  {'ratio':>6}  bandwidth e/t")
    for key, vals in best.items():
        e, t = vals["ember"], vals["torch"]
        extra = ""
        if key.startswith("allreduce"):
            n = dict(SIZES)[key.split(" ", 1)[1]] * 4
            extra = f"  {n / e / 1e9:6.2f} / {n / t / 1e9:6.2f} GB/s"
        print(f"{key:<28} {fmt(e)} {fmt(t)}  {e / t:5.2f}x{extra}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3].split(","))
    else:
        main(sys.argv[1:])
