"""Run a snippet in ``world_size`` real processes that form one process group.

``run_workers(body, world_size)`` writes a script (a prologue that reads RANK/WORLD_SIZE
and calls ``init_process_group`` unless ``init=False``, then ``body``) and starts one
interpreter per rank on 127.0.0.1, each bounded by ``timeout``; every process is killed in
a ``finally``. A worker reports values with ``report(obj)`` (one JSON line); the result is
the list of each rank's reports. A nonzero exit fails with the worker's stderr.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.distributed.ports import free_port  # noqa: F401  (re-exported)

pytest.importorskip("mpi4py")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROLOGUE = """
import json, os, sys
import numpy as np
import ember
import ember.distributed as dist
RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])

def report(obj):
    print("REPORT " + json.dumps(obj), flush=True)

"""


def run_workers(body, world_size=2, timeout=60, init=True, backend="gloo", env=None,
                expect_fail=(), python=sys.executable, prologue=PROLOGUE, abort_at_exit_ok=False):
    """Run ``body`` on ``world_size`` ranks; returns [[reports of rank 0], ...].
    Ranks in ``expect_fail`` may exit nonzero (their stderr is returned instead).
    ``abort_at_exit_ok``: a rank killed by SIGABRT after its reports still counts (torch's
    gloo can abort in its teardown after an early-termination error: "terminate called
    without an active exception")."""
    code = prologue
    if init:
        code += f"dist.init_process_group({backend!r})\n"
    code += textwrap.dedent(body)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "worker.py")
        with open(script, "w") as f:
            f.write(code)
        base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                    WORLD_SIZE=str(world_size), PYTHONPATH=ROOT, OMP_NUM_THREADS="1",
                    TMPDIR=tmp)
        base.update(env or {})
        procs = []
        try:
            for rank in range(world_size):
                procs.append(subprocess.Popen(
                    [python, script], env=dict(base, RANK=str(rank), LOCAL_RANK=str(rank)),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp))
            with ThreadPoolExecutor(len(procs)) as pool:    # read every rank at once
                outs = list(pool.map(lambda p: p.communicate(timeout=timeout), procs))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    results = []
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        reports = [json.loads(line[7:]) for line in out.splitlines()
                   if line.startswith("REPORT ")]
        aborted_after = abort_at_exit_ok and p.returncode == -6 and reports
        if p.returncode != 0 and rank not in expect_fail and not aborted_after:
            raise AssertionError(f"rank {rank} exited with {p.returncode}:\n{out}\n{err}")
        results.append(err if rank in expect_fail and p.returncode else reports)
    return results
