"""Worker processes of one agent: start binaries with per-rank env, redirect or tee their
std streams into ``<log_dir>/<local_rank>/{stdout,stderr}.log``, poll them, stop them
(``SIGTERM``, then ``SIGKILL`` after a grace period)."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from enum import IntFlag

from ember.distributed.elastic.multiprocessing.errors import ProcessFailure

__all__ = ["Std", "to_map", "start_processes", "PContext", "RunProcsResult",
           "SignalException", "DefaultLogsSpecs", "ProcessFailure"]


class SignalException(Exception):
    """The agent received a signal it forwards to the workers (``sigval``)."""

    def __init__(self, msg: str, sigval: signal.Signals):
        super().__init__(msg)
        self.sigval = sigval


class Std(IntFlag):
    NONE = 0
    OUT = 1
    ERR = 2
    ALL = 3

    @classmethod
    def from_str(cls, vm: str):
        """``"3"`` -> ``Std.ALL``; ``"0:1,1:2"`` -> ``{0: Std.OUT, 1: Std.ERR}``."""
        def one(v):
            s = cls(int(v))
            if int(v) not in (0, 1, 2, 3):
                raise ValueError(f"{v} is not a valid Std")
            return s
        if ":" not in vm:
            return one(vm)
        out = {}
        for part in vm.split(","):
            rank, v = part.split(":")
            out[int(rank)] = one(v)
        return out


def to_map(val_or_map, local_world_size: int) -> dict:
    """Expand a ``Std`` (or a partial ``{local_rank: Std}``) to every local rank."""
    if isinstance(val_or_map, Std):
        return {r: val_or_map for r in range(local_world_size)}
    return {r: val_or_map.get(r, Std.NONE) for r in range(local_world_size)}


class DefaultLogsSpecs:
    """Where worker logs go: ``<log_dir>/<run_id>_<random>/attempt_<k>/<local_rank>/``
    (a temporary ``torchelastic_*`` directory when ``log_dir`` is None)."""

    def __init__(self, log_dir=None, redirects=Std.NONE, tee=Std.NONE,
                 local_ranks_filter=None):
        if log_dir is not None and os.path.isfile(log_dir):
            raise NotADirectoryError(f"log_dir: {log_dir} is a file")
        self._root_log_dir = log_dir
        self.redirects = redirects
        self.tee = tee
        self.local_ranks_filter = local_ranks_filter
        self._run_log_dir = None

    @property
    def root_log_dir(self) -> str:
        return str(self._root_log_dir)

    def run_log_dir(self, run_id: str) -> str:
        if self._run_log_dir is None:
            base = self._root_log_dir
            if base is None:
                base = tempfile.mkdtemp(prefix="torchelastic_")
            os.makedirs(base, exist_ok=True)
            self._run_log_dir = tempfile.mkdtemp(prefix=f"{run_id}_", dir=base)
        return self._run_log_dir


@dataclass
class RunProcsResult:
    """``failures``: local rank -> ``ProcessFailure``; empty when every worker exited 0."""
    return_values: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    stdouts: dict = field(default_factory=dict)
    stderrs: dict = field(default_factory=dict)

    def is_failed(self) -> bool:
        return len(self.failures) > 0


def _pump(src, path, console, prefix):
    """Copy a worker's pipe line by line into its log file and onto the console."""
    with open(path, "ab", buffering=0) as log_file:
        for line in iter(src.readline, b""):
            log_file.write(line)
            if console is not None:
                console.write(prefix + line)
                console.flush()
    src.close()


class PContext:
    """The processes of one worker group (one per local rank)."""

    def __init__(self, name, entrypoint, args, envs, log_dir, redirects, tee, error_files,
                 log_line_prefixes=None, quiet_ranks=()):
        self.name = name
        self.entrypoint = entrypoint
        self.args, self.envs = args, envs
        self.error_files = error_files
        self.stdouts, self.stderrs = {}, {}
        self._procs, self._threads, self._files = {}, [], []
        self._failures = {}
        self._return_files = {}
        prefixes = log_line_prefixes or {}
        for rank in sorted(args):
            out, err = self._streams(rank, log_dir, redirects.get(rank, Std.NONE),
                                     tee.get(rank, Std.NONE), rank in quiet_ranks)
            if callable(entrypoint):
                cmd = self._callable_cmd(rank, log_dir, entrypoint, args[rank])
            else:
                cmd = [entrypoint, *map(str, args[rank])]
            self._procs[rank] = subprocess.Popen(cmd, env=envs[rank], stdout=out[0],
                                                 stderr=err[0])
            for (_, tee_path, console), pipe in ((out, self._procs[rank].stdout),
                                                 (err, self._procs[rank].stderr)):
                if tee_path is not None:
                    t = threading.Thread(target=_pump, daemon=True, args=(
                        pipe, tee_path, console, prefixes.get(rank, "").encode()))
                    t.start()
                    self._threads.append(t)

    def _callable_cmd(self, rank, log_dir, fn, fn_args):
        """``python -c`` running ``fn(*fn_args)`` (pickled, as the spawn start method
        needs) under ``record``; its return value comes back pickled."""
        rank_dir = os.path.join(log_dir, str(rank))
        os.makedirs(rank_dir, exist_ok=True)
        payload = os.path.join(rank_dir, "entrypoint.pkl")
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        with open(payload, "wb") as f:
            pickle.dump(main, f)
            pickle.dump((fn, tuple(fn_args)), f)
        self._return_files[rank] = os.path.join(rank_dir, "return_value.pkl")
        return [sys.executable, "-u", "-c", _CALLABLE_BOOT, payload, self._return_files[rank]]

    def _return_values(self):
        out = {}
        for rank in self._procs:
            path = self._return_files.get(rank)
            if path and os.path.exists(path):
                with open(path, "rb") as f:
                    out[rank] = pickle.load(f)
            else:
                out[rank] = None
        return out

    def _streams(self, rank, log_dir, redirect, tee, quiet):
        """(Popen target, tee file or None, console) for stdout then stderr."""
        rank_dir = os.path.join(log_dir, str(rank))
        res = []
        for flag, name, console in ((Std.OUT, "stdout", sys.stdout.buffer),
                                    (Std.ERR, "stderr", sys.stderr.buffer)):
            path = os.path.join(rank_dir, f"{name}.log")
            console = None if quiet else console
            if flag in tee:
                os.makedirs(rank_dir, exist_ok=True)
                res.append((subprocess.PIPE, path, console))
            elif flag in redirect:
                os.makedirs(rank_dir, exist_ok=True)
                f = open(path, "wb")
                self._files.append(f)
                res.append((f, None, console))
            else:
                res.append((subprocess.DEVNULL if quiet else None, None, console))
            if flag in tee or flag in redirect:
                (self.stdouts if flag is Std.OUT else self.stderrs)[rank] = path
        return res

    def pids(self) -> dict:
        return {rank: p.pid for rank, p in self._procs.items()}

    def wait(self, timeout: float = -1, period: float = 0.1):
        """Poll until all exited or one failed (returns the result) or ``timeout`` passed
        (returns ``None``); ``timeout=0`` polls once."""
        deadline = time.monotonic() + max(timeout, 0)
        while True:
            result = self._poll()
            if result is not None or time.monotonic() >= deadline:
                return result
            time.sleep(period)

    def _poll(self):
        for rank, proc in self._procs.items():
            code = proc.poll()
            if code not in (None, 0) and rank not in self._failures:
                self._failures[rank] = ProcessFailure(rank, proc.pid, code,
                                                      self.error_files[rank])
        if self._failures:
            return RunProcsResult(failures=dict(self._failures), stdouts=self.stdouts,
                                  stderrs=self.stderrs)
        if all(p.poll() is not None for p in self._procs.values()):
            self._join_pumps()
            return RunProcsResult(return_values=self._return_values(),
                                  stdouts=self.stdouts, stderrs=self.stderrs)
        return None

    def close(self, death_sig=signal.SIGTERM, timeout: float = 30):
        """Send ``death_sig`` to live workers, ``SIGKILL`` those still alive after
        ``timeout`` s; returns local rank -> ``ProcessFailure`` of the workers it stopped."""
        stopped = {}
        for rank, proc in self._procs.items():
            if proc.poll() is None:
                try:
                    proc.send_signal(death_sig)
                except ProcessLookupError:
                    pass
                stopped[rank] = proc
        deadline = time.monotonic() + timeout
        for proc in stopped.values():
            try:
                proc.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._join_pumps()
        for f in self._files:
            f.close()
        return {rank: ProcessFailure(rank, p.pid, p.returncode, self.error_files[rank])
                for rank, p in stopped.items() if p.returncode != 0}

    def _join_pumps(self):
        for t in self._threads:
            t.join(timeout=5)


_CALLABLE_BOOT = ("import sys; from ember.distributed.elastic.multiprocessing import "
                  "_run_pickled; _run_pickled(*sys.argv[1:])")


def _run_pickled(payload, return_file):
    """Worker side of a callable entry point: import the launcher's ``__main__`` as spawn
    does (``__mp_main__``), run the function under ``record``, pickle its return value."""
    import multiprocessing.spawn
    from ember.distributed.elastic.multiprocessing.errors import record
    with open(payload, "rb") as f:
        main = pickle.load(f)
        if main and os.path.exists(main):
            multiprocessing.spawn.import_main_path(main)
        fn, fn_args = pickle.load(f)
    result = record(fn)(*fn_args)
    with open(return_file, "wb") as f:
        pickle.dump(result, f)


def start_processes(name, entrypoint, args, envs, log_dir, redirects=Std.NONE, tee=Std.NONE,
                    error_files=None, log_line_prefixes=None, quiet_ranks=()):
    """Start one ``entrypoint *args[r]`` process per local rank ``r`` with env ``envs[r]``.

    ``redirects``/``tee`` are a ``Std`` or ``{local_rank: Std}``; redirected streams go to
    ``log_dir/<r>/stdout.log`` / ``stderr.log``, teed ones there and to the console with
    ``log_line_prefixes[r]``. ``entrypoint`` is a binary (str) or a picklable function
    (run in a fresh interpreter as with the spawn start method; ``return_values`` holds
    what it returns)."""
    n = len(args)
    error_files = error_files or {r: os.path.join(log_dir, str(r), "error.json")
                                  for r in args}
    return PContext(name, entrypoint, args, envs, log_dir, to_map(redirects, n),
                    to_map(tee, n), error_files, log_line_prefixes, quiet_ranks)
