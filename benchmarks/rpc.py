"""RPC: ember's ZeroMQ agent beside torch's TensorPipe agent, 2 processes on this machine.

    python benchmarks/rpc.py [--rounds 3]

Each round starts 2 fresh processes per library (ember, then torch), one compute thread
each, on 127.0.0.1; they meet with env:// and rank 0 times, against rank 1:
  * the round trip of an empty call (``rpc_sync(noop)``), median of 2000;
  * the round trip of a 1 MB and a 64 MB float32 tensor echo, median of 200 and of 8;
  * the throughput of 1000 concurrent small ``rpc_async(add, (4 floats, 1))`` calls.
The best of the rounds is printed with the ratio ember / torch (lower is better for times,
higher for throughput).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def noop():
    return None


def echo(x):
    return x


def _median(fn, reps, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(lib_name):
    """One rank: rank 0 times the cases against rank 1 and prints a JSON line."""
    if lib_name == "torch":
        import torch as lib
        import torch.distributed.rpc  # noqa: F401
    else:
        sys.path.insert(0, ROOT)
        import ember as lib
        import ember.distributed.rpc  # noqa: F401
    lib.set_num_threads(1)
    rpc = lib.distributed.rpc
    rank = int(os.environ["RANK"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
    out = {}
    if rank == 0:
        out["empty call"] = _median(lambda: rpc.rpc_sync(1, noop), 2000, warmup=100)
        for label, n, reps, warmup in (("echo 1 MB", 256 * 1024, 200, 10),
                                       ("echo 64 MB", 16 << 20, 8, 2)):
            x = lib.ones(n)
            out[label] = _median(lambda: rpc.rpc_sync(1, echo, args=(x,)), reps, warmup)
        small = lib.ones(4)

        def burst():
            futs = [rpc.rpc_async(1, lib.add, args=(small, 1)) for _ in range(1000)]
            lib.futures.wait_all(futs)
        burst()
        out["1000 async calls/s"] = 1000 / min(_median(burst, 3, warmup=0) for _ in range(2))
        print("RESULT " + json.dumps(out), flush=True)
    rpc.shutdown()


def run_pair(lib_name, timeout=600):
    sys.path.insert(0, HERE)
    from common import run_ranks
    return run_ranks(__file__, [lib_name], timeout=timeout)


def fmt(value, key):
    if key.endswith("/s"):
        return f"{value:9.0f}  "
    if value < 1e-3:
        return f"{value * 1e6:8.1f} us"
    return f"{value * 1e3:8.2f} ms"


def main(argv):
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    sys.path.insert(0, HERE)
    from common import machine
    print(f"# rpc, 2 processes, ember (ZeroMQ) vs torch (TensorPipe)\nmachine: {machine()}")
    best = {}
    for _ in range(rounds):
        for lib_name in ("ember", "torch"):
            for key, value in run_pair(lib_name).items():
                pick = max if key.endswith("/s") else min
                old = best.setdefault(key, {}).get(lib_name)
                best[key][lib_name] = value if old is None else pick(old, value)
            time.sleep(1.0)             # let the other library's processes go quiet
    print(f"{'case':<22} {'ember':>11} {'torch':>11}  ratio e/t")
    for key, vals in best.items():
        e, t = vals["ember"], vals["torch"]
        print(f"{key:<22} {fmt(e, key)} {fmt(t, key)}  {e / t:5.2f}x", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main(sys.argv[1:])
