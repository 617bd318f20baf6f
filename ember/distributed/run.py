"""``python -m ember.distributed.run`` (torchrun): launch ``--nproc-per-node`` workers on
each of ``--nnodes`` nodes, supervised by an elastic agent.

``python -m ember.run -m torch.distributed.run [options] script.py`` runs this with
``import torch`` -> ember in the workers too (they inherit ``PYTHONPATH``/``EMBER_TORCH_ALIAS``).
Options, spellings (``--nproc-per-node``/``--nproc_per_node``), defaults and the ``PET_*``
environment defaults are torchrun's. Each worker gets torch's env (``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` of a store its agent serves, ...). A failed
run raises ``ChildFailedError`` (torchrun's report) and exits 1.
"""
from __future__ import annotations

import logging
import os
import sys
import uuid
from argparse import REMAINDER, ArgumentParser

from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from ember.distributed.elastic.multiprocessing.errors import record
from ember.distributed.elastic.utils.argparse_util import check_env, env
from ember.distributed.launcher.api import LaunchConfig, elastic_launch, launch_agent  # noqa: F401

__all__ = ["get_args_parser", "parse_args", "parse_min_max_nnodes", "determine_local_world_size",
           "get_rdzv_endpoint", "get_use_env", "run_script_path", "config_from_args",
           "LaunchConfig", "launch_agent", "elastic_launch", "run", "main"]

log = logging.getLogger("ember.distributed.elastic")


def get_args_parser() -> ArgumentParser:
    """torchrun's parser (``training_script`` then its arguments)."""
    p = ArgumentParser(description="Torch Distributed Elastic Training Launcher")

    def opt(name, **kw):
        names = [f"--{name}"] if "-" not in name else [f"--{name}", f"--{name.replace('-', '_')}"]
        p.add_argument(*names, **kw)

    opt("nnodes", action=env, type=str, default="1:1",
        help="Number of nodes, or the range of nodes in form <minimum_nodes>:<maximum_nodes>.")
    opt("nproc-per-node", action=env, type=str, default="1",
        help="Number of workers per node; supported values: [auto, cpu, gpu, xpu, int].")
    opt("rdzv-backend", action=env, type=str, default="static", help="Rendezvous backend.")
    opt("rdzv-endpoint", action=env, type=str, default="",
        help="Rendezvous backend endpoint; usually in form <host>:<port>.")
    opt("rdzv-id", action=env, type=str, default="none", help="User-defined group id.")
    opt("rdzv-conf", action=env, type=str, default="",
        help="Additional rendezvous configuration (<key1>=<value1>,<key2>=<value2>,...).")
    opt("standalone", action=check_env,
        help="Start a local standalone rendezvous backend that is represented by a C10d TCP "
             "store on a free port. Useful when launching single-node, multi-worker job. If "
             "specified --rdzv-backend, --rdzv-endpoint, --rdzv-id are auto-assigned and any "
             "explicitly set values are ignored.")
    opt("max-restarts", action=env, type=int, default=0,
        help="Maximum number of worker group restarts before failing.")
    opt("monitor-interval", action=env, type=float, default=0.1,
        help="Interval, in seconds, to monitor the state of workers.")
    opt("start-method", action=env, type=str, default="spawn",
        choices=["spawn", "fork", "forkserver"],
        help="Multiprocessing start method to use when creating workers.")
    opt("event-log-handler", action=env, type=str, default="null",
        help="name of a registered event logging handler (see: "
             "https://docs.pytorch.org/docs/stable/elastic/events.html)")
    opt("role", action=env, type=str, default="default",
        help="User-defined role for the workers.")
    p.add_argument("-m", "--module", action=check_env,
                   help="Change each process to interpret the launch script as a Python "
                        "module, executing with the same behavior as 'python -m'.")
    opt("no-python", action=check_env,
        help="Skip prepending the training script with 'python' - just execute it directly. "
             "Useful when the script is not a Python script.")
    opt("run-path", action=check_env,
        help="Run the training script with runpy.run_path in the same interpreter. Script "
             "must be provided as an abs path (e.g. /abs/path/script.py). Takes precedence "
             "over --no-python.")
    opt("log-dir", action=env, type=str, default=None,
        help="Base directory to use for log files (e.g. /var/log/torch/elastic). The same "
             "directory is reused for multiple runs (a unique job-level sub-directory is "
             "created with rdzv_id as the prefix).")
    p.add_argument("-r", "--redirects", action=env, type=str, default="0",
                   help="Redirect std streams into a log file in the log directory (e.g. "
                        "[-r 3] redirects both stdout+stderr for all workers, [-r 0:1,1:2] "
                        "redirects stdout for local rank 0 and stderr for local rank 1).")
    p.add_argument("-t", "--tee", action=env, type=str, default="0",
                   help="Tee std streams into a log file and also to console (see "
                        "--redirects for format).")
    opt("local-ranks-filter", action=env, type=str, default="",
        help="Only show logs from specified ranks in console (e.g. "
             "[--local_ranks_filter=0,1,2] will only show logs from rank 0, 1 and 2). This "
             "will only apply to stdout and stderr, not tolog files saved via --redirect or "
             "--tee")
    opt("duplicate-stdout-filters", action=env, type=_comma_list, default=[],
        help="Duplicates logs streamed to stdout to another specified file with a list of "
             "filters (not supported by ember: must stay empty)")
    opt("duplicate-stderr-filters", action=env, type=_comma_list, default=[],
        help="Duplicates logs streamed to stderr to another specified file with a list of "
             "filters (not supported by ember: must stay empty)")
    opt("node-rank", action=env, type=int, default=0,
        help="Rank of the node for multi-node distributed training. It is only used for "
             "static rendezvous (i.e., when ``--rdzv-backend=static``).")
    opt("master-addr", action=env, type=str, default="127.0.0.1",
        help="Address of the master node (rank 0) that only used for static rendezvous. It "
             "should be either the IP address or the hostname of rank 0. For single node "
             "multi-proc training the --master-addr can simply be 127.0.0.1; IPv6 should have "
             "the pattern `[0:0:0:0:0:0:0:1]`.")
    opt("master-port", action=env, type=int, default=None,
        help="Port on the master node (rank 0) to be used for communication during "
             "distributed training. It is only used for static rendezvous. Defaults to 29500.")
    opt("local-addr", action=env, type=str, default=None,
        help="Address of the local node. If specified, will use the given address for "
             "connection. Else, will look up the local node address instead. Else, it will be "
             "default to local machine's FQDN.")
    opt("logs-specs", default=None, type=str,
        help="torchrun.logs_specs group entrypoint name (not supported by ember)")
    opt("numa-binding", default=None, type=str,
        choices=["node", "socket", "exclusive", "core-complex"],
        help="Bind worker processes to CPUs near their assigned GPUs (ignored on CPU).")
    opt("signals-to-handle", action=env, type=str, default="SIGTERM,SIGINT,SIGHUP,SIGQUIT",
        help="Comma-separated list of signals to handle and forward to subprocesses. Default: "
             "SIGTERM,SIGINT,SIGHUP,SIGQUIT.")
    opt("shutdown-timeout", action=env, type=int, default=None,
        help="Time in seconds to wait for graceful shutdown of worker processes before "
             "sending SIGKILL. If not specified, uses TORCH_ELASTIC_SHUTDOWN_TIMEOUT "
             "environment variable or defaults to 30 seconds.")
    opt("virtual-local-rank", action=check_env,
        help="Enable virtual local rank mode for workers (LOCAL_RANK is 0 for all workers).")
    p.add_argument("training_script", type=str,
                   help="Full path to the (single GPU) training program/script to be launched "
                        "in parallel, followed by all the arguments for the training script.")
    p.add_argument("training_script_args", nargs=REMAINDER)
    return p


def _comma_list(value):
    """``"a,b,,c"`` -> ``["a", "b,c"]`` (a doubled comma escapes a comma)."""
    if not value:
        return []
    return [s.replace("\0", ",") for s in value.replace(",,", "\0").split(",") if s]


def parse_args(args):
    return get_args_parser().parse_args(args)


def parse_min_max_nnodes(nnodes: str):
    parts = nnodes.split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise RuntimeError(f'nnodes={nnodes} is not in "MIN:MAX" format')


def determine_local_world_size(nproc_per_node: str) -> int:
    """``int`` as given; ``cpu`` / ``auto`` -> the CPU count (no accelerators in ember)."""
    try:
        return int(nproc_per_node)
    except ValueError:
        pass
    if nproc_per_node in ("cpu", "auto"):
        return os.cpu_count()
    if nproc_per_node == "gpu":
        raise ValueError("Cuda is not available.")
    if nproc_per_node == "xpu":
        raise ValueError("Xpu is not available.")
    raise ValueError(f"Unsupported nproc_per_node value: {nproc_per_node}")


def _parse_rdzv_conf(conf: str) -> dict:
    out = {}
    for kv in filter(None, (s.strip() for s in conf.split(","))):
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise ValueError(f"The rendezvous configuration string '{conf}' must be in format "
                             "<key1>=<value1>,...,<keyN>=<valueN>.")
        out[key.strip()] = value.strip()
    return out


def get_rdzv_endpoint(args) -> str:
    """``--rdzv-endpoint``; for static rendezvous without one, ``master_addr:master_port``."""
    if args.rdzv_backend == "static" and not args.rdzv_endpoint:
        return f"{args.master_addr}:{args.master_port or 29500}"
    return args.rdzv_endpoint


def get_use_env(args) -> bool:
    """Legacy launch: whether ``--use-env`` was given (torchrun always uses the env)."""
    return getattr(args, "use_env", True)


def run_script_path(training_script: str, *training_script_args: str):
    """Run ``training_script`` as ``__main__`` in this interpreter (``--run-path``)."""
    import runpy
    sys.argv = [training_script, *training_script_args]
    runpy.run_path(sys.argv[0], run_name="__main__")


def config_from_args(args):
    """``(LaunchConfig, entrypoint, entrypoint args)``; sets ``OMP_NUM_THREADS=1`` (with
    torch's warning) for several workers when unset."""
    if args.duplicate_stdout_filters or args.duplicate_stderr_filters:
        raise NotImplementedError("--duplicate-stdout-filters/--duplicate-stderr-filters are "
                                  "not supported by ember's launcher")
    if args.logs_specs:
        raise NotImplementedError("--logs-specs (a logs_specs entry point) is not supported by "
                                  "ember's launcher")
    min_nodes, max_nodes = parse_min_max_nnodes(args.nnodes)
    if not 0 < min_nodes <= max_nodes:
        raise AssertionError
    if args.max_restarts < 0:
        raise AssertionError
    nproc = determine_local_world_size(args.nproc_per_node)
    if nproc <= 0:
        raise AssertionError
    if "OMP_NUM_THREADS" not in os.environ and nproc > 1:
        os.environ["OMP_NUM_THREADS"] = "1"
        print("\n*****************************************\n"
              "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
              "default, to avoid your system being overloaded, please further tune the "
              "variable for optimal performance in your application as needed. \n"
              "*****************************************", file=sys.stderr, flush=True)
    rdzv_configs = _parse_rdzv_conf(args.rdzv_conf)
    if args.rdzv_backend == "static":
        rdzv_configs["rank"] = args.node_rank
    rdzv_endpoint = get_rdzv_endpoint(args)
    ranks_filter = None
    if args.local_ranks_filter:
        ranks_filter = set(map(int, args.local_ranks_filter.split(",")))
    config = LaunchConfig(
        min_nodes=min_nodes, max_nodes=max_nodes, nproc_per_node=nproc, run_id=args.rdzv_id,
        role=args.role, rdzv_endpoint=rdzv_endpoint, rdzv_backend=args.rdzv_backend,
        rdzv_configs=rdzv_configs, max_restarts=args.max_restarts,
        monitor_interval=args.monitor_interval, start_method=args.start_method,
        local_addr=args.local_addr, event_log_handler=args.event_log_handler,
        logs_specs=DefaultLogsSpecs(args.log_dir, Std.from_str(args.redirects),
                                    Std.from_str(args.tee), ranks_filter),
        shutdown_timeout=args.shutdown_timeout, signals_to_handle=args.signals_to_handle,
        virtual_local_rank=args.virtual_local_rank)
    if args.no_python and args.module:
        raise ValueError("Don't use both the '--no-python' flag and the '--module' flag at the "
                         "same time.")
    if args.run_path:
        cmd = sys.executable
        cmd_args = ["-u", "-c", _RUN_PATH_CODE, args.training_script]
    elif args.no_python:
        cmd, cmd_args = args.training_script, []
    else:
        cmd = sys.executable
        cmd_args = ["-u", "-m", args.training_script] if args.module else \
            ["-u", args.training_script]
    cmd_args += list(args.training_script_args)
    return config, cmd, cmd_args


_RUN_PATH_CODE = ("import sys; from ember.distributed.run import run_script_path; "
                  "run_script_path(*sys.argv[1:])")


def run(args):
    """Launch from parsed ``args`` (``--standalone`` picks a c10d store on a free port)."""
    os.environ["TORCHELASTIC_SIGNALS_TO_HANDLE"] = str(args.signals_to_handle)
    if args.standalone:
        from ember.distributed.elastic.utils.distributed import get_free_port
        args.rdzv_backend = "c10d"
        args.rdzv_endpoint = f"localhost:{get_free_port()}"
        args.rdzv_id = str(uuid.uuid4())
        log.info("Using standalone rendezvous with id %s at %s", args.rdzv_id,
                 args.rdzv_endpoint)
    config, cmd, cmd_args = config_from_args(args)
    elastic_launch(config=config, entrypoint=cmd)(*cmd_args)


class _GlogFormatter(logging.Formatter):
    """torchrun's log lines: ``W1129 15:32:12.381000 27936 ember/distributed/...py:12] msg``."""
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def format(self, record):
        record.relpath = os.path.relpath(record.pathname, self._root)
        record.usecs = int(record.msecs) * 1000
        return super().format(record)


def _configure_logging():
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_GlogFormatter(
            "%(levelname).1s%(asctime)s.%(usecs)06d %(process)d %(relpath)s:%(lineno)d] "
            "%(message)s", "%m%d %H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(os.environ.get("LOGLEVEL", "WARNING"))
        log.propagate = False


@record
def main(args=None):
    _configure_logging()
    run(parse_args(args))


if __name__ == "__main__":
    main()
