"""Ports for test processes on 127.0.0.1."""
from __future__ import annotations

import os
import socket

_PORTS_PER_WORKER = 400
_next_port = [0]


def free_port():
    """A port no other test process will pick: each pytest-xdist worker (and each plain
    run, by its pid) takes ports from its own slice of 20000-31999, below the kernel's
    ephemeral range, so a port handed out here is never also the ephemeral port of another
    worker's listener. (Ports from ``bind(0)`` collided between workers: the ranks of one
    test then joined another test's store and waited for peers until the timeout.)"""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    slot = int(worker[2:]) if worker[2:].isdigit() else 29 - os.getpid() % 7
    base = 20000 + (slot % 30) * _PORTS_PER_WORKER
    for _ in range(_PORTS_PER_WORKER):
        port = base + _next_port[0] % _PORTS_PER_WORKER
        _next_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"free_port: no free port in {base}..{base + _PORTS_PER_WORKER}")
