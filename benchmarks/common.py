"""Timing helpers shared by the benchmarks: best-of-N wall time, side by side."""
from __future__ import annotations

import os
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


class _Child:
    """A benchmark child process speaking ``serve_blocks``'s line protocol."""

    def __init__(self, argv):
        import subprocess
        import sys
        self.proc = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        while True:
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError(f"benchmark child {self.proc.args[1:]} exited "
                                   f"(status {self.proc.wait()})")
            if reply.startswith("@"):            # the protocol's lines; others pass through
                return reply[1:].split()

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def bench_processes(children, *, min_time=0.2, repeat=5, warmup=2):
    """``bench_interleaved`` with each function in a process of its own: ``children`` maps a
    name to the argv of a script that calls ``serve_blocks(fn)``. The blocks alternate as in
    ``bench_interleaved``, but neither library's threads, heap or caches are in the other's
    process (a user runs one of them). Returns a dict of best per-call seconds."""
    procs = {}
    try:
        for name, argv in children.items():   # one after another: a child may read
            procs[name] = _Child(argv)         # what an earlier one wrote when ready
            procs[name].ask("ready")
        sizes = {}
        for name, child in procs.items():
            n, per = child.ask(f"size {min_time} {repeat} {warmup}")
            sizes[name] = (int(n), float(per))
        best = {name: per for name, (n, per) in sizes.items()}
        for _ in range(repeat - 1):
            for name, child in procs.items():
                time.sleep(_SETTLE_S)            # the other process's spinners go idle
                per = float(child.ask(f"block {sizes[name][0]}")[0])
                best[name] = min(best[name], per)
        return best
    finally:
        for child in procs.values():
            child.close()


def serve_blocks(fn, stdin=None, stdout=None):
    """A ``bench_processes`` child's loop: reads ``size MIN_TIME REPEAT WARMUP`` (answers
    ``@N PER_CALL``) and ``block N`` (one untimed call, N timed ones; answers ``@PER_CALL``)
    from stdin until it closes; ``ready`` answers ``@ok``."""
    import sys
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    for line in stdin:
        cmd, *args = line.split()
        if cmd == "ready":
            print("@ok", file=stdout, flush=True)
        elif cmd == "size":
            n, per = _sized_loop(fn, float(args[0]), int(args[1]), int(args[2]))
            print(f"@{n} {per!r}", file=stdout, flush=True)
        elif cmd == "block":
            n = int(args[0])
            gc_was = gc.isenabled()
            gc.disable()
            try:
                fn()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                per = (time.perf_counter() - t0) / n
            finally:
                if gc_was:
                    gc.enable()
            print(f"@{per!r}", file=stdout, flush=True)


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
    return f"{cpu}, {cpus()} cores, Python {platform.python_version()}"


def cpus():
    """The cores this process may run on (``taskset`` narrows them), as ember counts them:
    torch's and the benchmarks' thread counts follow it."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_ranks(script, worker_args, *, world_size=2, timeout=600):
    """Run ``python script --worker *worker_args`` as ``world_size`` local processes that
    meet by env:// (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free
    MASTER_PORT; one BLAS/OpenMP thread each; the repository on PYTHONPATH) and return the
    dict rank 0 printed as a ``RESULT {json}`` line. A rank still running on the way out is
    killed; one that failed raises RuntimeError with the end of its stderr."""
    import json
    import os
    import socket
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(world_size), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.path.dirname(here))
    command = [sys.executable, os.path.abspath(script), "--worker", *worker_args]
    ranks = []
    try:
        for rank in range(world_size):
            ranks.append(subprocess.Popen(
                command, env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)), cwd=here,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outputs = [p.communicate(timeout=timeout) for p in ranks]
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(ranks, outputs):
        if p.returncode:
            raise RuntimeError(f"{' '.join(worker_args)} worker failed:\n{err[-3000:]}")
    result = next(line for line in outputs[0][0].splitlines() if line.startswith("RESULT "))
    return json.loads(result[len("RESULT "):])
