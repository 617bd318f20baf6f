"""``LocalElasticAgent``: start the local workers as subprocesses, watch them, restart the
whole group (re-rendezvous) on a failure or a membership change while restarts remain.

A failure on any node uses up one restart on every node (torch counts it only on the node
whose worker failed), so ``TORCHELASTIC_RESTART_COUNT`` -- and the ``/worker/attempt_<n>``
store prefix env:// derives from it -- is the same on all nodes of a round. A node joining
does not use up a restart."""
from __future__ import annotations

import logging
import os
import signal
import time

from ember.distributed.elastic.agent.server.api import (ElasticAgent, RunResult, WorkerGroup,
                                                        WorkerSpec, WorkerState)
from ember.distributed.elastic.multiprocessing import (DefaultLogsSpecs, SignalException,
                                                      start_processes)

__all__ = ["LocalElasticAgent", "DefaultLogsSpecs"]

log = logging.getLogger("ember.distributed.elastic")


def _substitute(args, local_rank):
    return tuple(a.replace("${local_rank}", str(local_rank)) if isinstance(a, str) else a
                 for a in args)


class LocalElasticAgent(ElasticAgent):
    """Agent of one node: rendezvous, start ``spec.local_world_size`` workers, monitor."""

    def __init__(self, spec: WorkerSpec, logs_specs: DefaultLogsSpecs | None = None,
                 start_method: str = "spawn", exit_barrier_timeout: float = 300,
                 shutdown_timeout: float = 30):
        self._spec = spec
        self._logs_specs = logs_specs or DefaultLogsSpecs()
        self._start_method = start_method
        self._exit_barrier_timeout = exit_barrier_timeout
        self._shutdown_timeout = shutdown_timeout
        self._worker_group = WorkerGroup(spec)
        self._remaining_restarts = spec.max_restarts
        self._pcontext = None
        self._store_lost = False

    def get_worker_group(self, role: str = "default") -> WorkerGroup:
        return self._worker_group

    @property
    def restart_count(self) -> int:
        return self._spec.max_restarts - self._remaining_restarts

    # ---- rendezvous and start ----------------------------------------------------------
    def _rendezvous(self):
        spec, wg = self._spec, self._worker_group
        rdzv = spec.rdzv_handler
        info = rdzv.next_rendezvous()
        store, group_rank, group_world = info.store, info.rank, info.world_size
        key = f"/torchelastic/rdzv/{rdzv.get_run_id()}/r{rdzv.round}/nproc"
        store.set(f"{key}/{group_rank}", str(spec.local_world_size))
        sizes = [int(store.get(f"{key}/{g}")) for g in range(group_world)]
        base, world = sum(sizes[:group_rank]), sum(sizes)
        wg.store, wg.group_rank, wg.group_world_size = store, group_rank, group_world
        wg.master_addr = info.bootstrap_store_info.master_addr
        wg.master_port = info.bootstrap_store_info.master_port
        for w in wg.workers:
            w.global_rank = w.role_rank = base + w.local_rank
            w.world_size = w.role_world_size = world

    def _worker_env(self, worker, error_file):
        spec, wg = self._spec, self._worker_group
        env = dict(os.environ)
        env.update({
            "LOCAL_RANK": str(worker.local_rank), "RANK": str(worker.global_rank),
            "GROUP_RANK": str(wg.group_rank), "ROLE_RANK": str(worker.role_rank),
            "ROLE_NAME": spec.role, "LOCAL_WORLD_SIZE": str(spec.local_world_size),
            "WORLD_SIZE": str(worker.world_size),
            "GROUP_WORLD_SIZE": str(wg.group_world_size),
            "ROLE_WORLD_SIZE": str(worker.role_world_size),
            "MASTER_ADDR": wg.master_addr, "MASTER_PORT": str(wg.master_port),
            "TORCHELASTIC_RESTART_COUNT": str(self.restart_count),
            "TORCHELASTIC_MAX_RESTARTS": str(spec.max_restarts),
            "TORCHELASTIC_RUN_ID": spec.rdzv_handler.get_run_id(),
            "TORCHELASTIC_USE_AGENT_STORE": str(spec.rdzv_handler.use_agent_store),
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                         "1"),
            "TORCHELASTIC_ERROR_FILE": error_file,
        })
        if spec.virtual_local_rank:
            env["LOCAL_RANK"] = "0"
        return env

    def _start_workers(self):
        spec, wg, logs = self._spec, self._worker_group, self._logs_specs
        attempt_dir = os.path.join(logs.run_log_dir(spec.rdzv_handler.get_run_id()),
                                   f"attempt_{self.restart_count}")
        args, envs, error_files, prefixes = {}, {}, {}, {}
        for w in wg.workers:
            r = w.local_rank
            error_files[r] = os.path.join(attempt_dir, str(r), "error.json")
            os.makedirs(os.path.dirname(error_files[r]), exist_ok=True)
            if os.path.exists(error_files[r]):
                os.remove(error_files[r])
            args[r] = _substitute(spec.args, r)
            envs[r] = self._worker_env(w, error_files[r])
            prefixes[r] = f"[{spec.role}{r}]:"
        quiet = ()
        if logs.local_ranks_filter:
            quiet = tuple(r for r in args if r not in logs.local_ranks_filter)
        self._pcontext = start_processes(
            spec.role, spec.entrypoint, args, envs, attempt_dir, redirects=logs.redirects,
            tee=logs.tee, error_files=error_files, log_line_prefixes=prefixes,
            quiet_ranks=quiet)
        for w in wg.workers:
            w.id = self._pcontext.pids()[w.local_rank]
        wg.state = WorkerState.HEALTHY

    def _initialize_workers(self):
        self._rendezvous()
        self._start_workers()

    def _stop_workers(self, death_sig=signal.SIGTERM):
        """Stop the live workers; returns their failures (local rank -> ProcessFailure)."""
        if self._pcontext is None:
            return {}
        for rank, pid in self._pcontext.pids().items():
            if self._pcontext._procs[rank].poll() is None:
                log.warning("Sending process %s closing signal %s", pid, death_sig.name)
        stopped = self._pcontext.close(death_sig, self._shutdown_timeout)
        self._pcontext = None
        self._worker_group.state = WorkerState.STOPPED
        return stopped

    def _restart_workers(self):
        self._stop_workers()
        self._initialize_workers()

    # ---- monitoring --------------------------------------------------------------------
    def _global(self, local_failures):
        ranks = {w.local_rank: w.global_rank for w in self._worker_group.workers}
        return {ranks[r]: f for r, f in local_failures.items()}

    def _monitor_workers(self) -> RunResult:
        result = self._pcontext.wait(0)
        if result is None:
            return RunResult(WorkerState.HEALTHY)
        if result.is_failed():
            for f in result.failures.values():
                log.error("failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s",
                          f.exitcode, f.local_rank, f.pid, self._spec.entrypoint)
            failures = dict(result.failures)
            for r, f in self._stop_workers().items():
                failures.setdefault(r, f)
            return RunResult(WorkerState.FAILED, failures=self._global(failures))
        return RunResult(WorkerState.SUCCEEDED, return_values=self._global(
            result.return_values))

    def _peer_reason(self):
        """Why the other agents want a new round: None, "join", "failure", "closed", or
        "lost" when the rendezvous store is unreachable (its host agent left)."""
        rdzv = self._spec.rdzv_handler
        try:
            if rdzv.is_closed():
                return "closed"
            return rdzv.next_round_reason()
        except Exception:  # noqa: BLE001
            return "lost"

    def _fail(self, result, close=True):
        if close:
            try:
                self._spec.rdzv_handler.set_closed()
            except Exception:  # noqa: BLE001
                pass
        self._worker_group.state = WorkerState.FAILED
        return result

    def _invoke_run(self, role="default") -> RunResult:
        spec, rdzv = self._spec, self._spec.rdzv_handler
        self._initialize_workers()
        while True:
            time.sleep(spec.monitor_interval)
            result = self._monitor_workers()
            if result.state == WorkerState.SUCCEEDED:
                self._worker_group.state = WorkerState.SUCCEEDED
                try:
                    rdzv.exit_barrier(self._exit_barrier_timeout)
                except Exception as e:  # noqa: BLE001 - our workers are done anyway
                    log.warning("exit barrier failed: %s", e)
                return result
            if result.state == WorkerState.FAILED:
                if self._remaining_restarts <= 0 or self._store_lost:
                    return self._fail(result)
                self._remaining_restarts -= 1
                rdzv.request_next_round("failure")
                self._restart_workers()
                continue
            reason = self._peer_reason()
            if reason == "lost":
                if not self._store_lost:
                    log.warning("the rendezvous store is unreachable; the local workers run "
                                "on without coordination with other nodes")
                    self._store_lost = True
                continue
            if reason == "closed":
                try:
                    rdzv.ack_closed()
                except Exception:  # noqa: BLE001 - the store's host is gone already
                    pass
                return self._fail(RunResult(WorkerState.FAILED, failures=self._global(
                    self._stop_workers())), close=False)
            if reason == "failure":
                if self._remaining_restarts <= 0:
                    return self._fail(RunResult(WorkerState.FAILED, failures=self._global(
                        self._stop_workers())))
                self._remaining_restarts -= 1
            if reason is not None:
                self._restart_workers()

    def run(self, role: str = "default") -> RunResult:
        try:
            return self._invoke_run(role)
        except SignalException as e:
            log.warning("Received %s death signal, shutting down workers", e.sigval)
            self._stop_workers(e.sigval)
            raise
        finally:
            self._stop_workers()
            self._spec.rdzv_handler.shutdown()
