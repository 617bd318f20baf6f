"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes; an exception
in a child is re-raised in the parent as ``ProcessRaisedException`` carrying the child's
traceback, a child that dies otherwise as ``ProcessExitedException``.

Each child gets a file path of its own; a child that raises pickles its formatted traceback
there and exits with code 1, so the parent can tell "raised" (the file exists) from "died"
(no file: an exit code or a signal).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

__all__ = ["ProcessException", "ProcessRaisedException", "ProcessExitedException",
           "ProcessContext", "SpawnContext", "start_processes", "spawn"]


class ProcessException(Exception):
    """A child process failed: ``error_index`` is its index, ``pid`` its process id."""

    def __init__(self, msg, error_index, pid):
        Exception.__init__(self, msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def _fields(self) -> tuple:
        return self.msg, self.error_index, self.pid

    def __reduce__(self):
        return type(self), self._fields()


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process exited with a nonzero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        ProcessException.__init__(self, msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def _fields(self) -> tuple:
        return ProcessException._fields(self) + (self.exit_code, self.signal_name)


def _child_main(fn, index, args, error_path):
    """Body of each child: run ``fn``; report an exception through ``error_path``."""
    try:
        fn(index, *args)
        return
    except KeyboardInterrupt:
        return                      # the parent is stopping the children
    except Exception:  # noqa: BLE001 - every failure goes back to the parent
        report = traceback.format_exc()
    with open(error_path, "wb") as out:
        pickle.dump(report, out)
    sys.exit(1)


def _unused_path() -> str:
    """A fresh temporary file name; the file itself is created only by a failing child."""
    fd, path = tempfile.mkstemp(prefix="ember-spawn-", suffix=".pkl")
    os.close(fd)
    os.unlink(path)
    return path


class ProcessContext:
    """The started processes; ``join`` waits for them and raises on the first failure."""

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {proc.sentinel: index for index, proc in enumerate(processes)}

    def pids(self):
        return [int(proc.pid) for proc in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait for the processes. Returns True once all exited cleanly, False if some are
        still running after ``timeout``; on a child's failure terminates the others and
        raises ``ProcessRaisedException`` / ``ProcessExitedException``."""
        if not self.sentinels:
            return True
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            proc = self.processes[index]
            proc.join()
            if proc.exitcode != 0:
                self._stop_all(30 if grace_period is None else grace_period)
                raise self._failure(index)
        return not self.sentinels

    def _stop_all(self, grace: float) -> None:
        """SIGTERM the children still running, SIGKILL any left after ``grace`` seconds."""
        running = [proc for proc in self.processes if proc.is_alive()]
        for proc in running:
            proc.terminate()
        deadline = time.monotonic() + grace
        for proc in running:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.processes:
            if proc.is_alive():
                proc.kill()
            proc.join()

    def _failure(self, index) -> ProcessException:
        proc, path = self.processes[index], self.error_files[index]
        if os.path.exists(path):
            with open(path, "rb") as f:
                trace = pickle.load(f)
            return ProcessRaisedException(
                f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                index, proc.pid)
        code = proc.exitcode
        name = signal.Signals(-code).name if code < 0 else None
        how = f"signal {name}" if name else f"exit code {code}"
        return ProcessExitedException(f"process {index} terminated with {how}",
                                      error_index=index, error_pid=proc.pid, exit_code=code,
                                      signal_name=name)


class SpawnContext(ProcessContext):
    """Old name of :class:`ProcessContext` (warns)."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.")
        ProcessContext.__init__(self, processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with the given start method.
    With ``join`` waits for all of them (re-raising a child's failure); otherwise returns
    the ``ProcessContext``."""
    context_of_method = multiprocessing.get_context(start_method)
    error_files = [_unused_path() for _ in range(nprocs)]
    processes = []
    for index, path in enumerate(error_files):
        proc = context_of_method.Process(target=_child_main, args=(fn, index, args, path),
                                         daemon=daemon)
        proc.start()
        processes.append(proc)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    try:
        while not context.join():
            continue
    finally:
        for path in error_files:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawn ``nprocs`` processes that run ``fn(i, *args)`` (``i`` the process index).
    Returns None when joined, else a ``ProcessContext``."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t "
                      "torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
