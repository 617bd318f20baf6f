"""ember.distributed.run (torchrun), the elastic agent and ember.distributed.launch, against
torch's torchrun run on the same scripts: real worker processes on 127.0.0.1."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from tests.distributed.ports import free_port

torch = pytest.importorskip("torch")

LAUNCHER = [sys.executable, "-m", "ember.distributed.run"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
TIMEOUT = 60

PRINT_ENV = """
import json, os, sys
base = set(json.loads(os.environ["BASE_KEYS"]))
new = {k: v for k, v in os.environ.items() if k not in base and k != "_"}
sys.stdout.write("ENV " + json.dumps(new) + "\\nARGV " + json.dumps(sys.argv[1:]) + "\\n")
"""   # one write: workers run unbuffered (python -u) and share the console

EXIT_OR_SLEEP = """
import os, sys, time
sys.stdout.write(f"rank {os.environ['RANK']} restart "
                 f"{os.environ['TORCHELASTIC_RESTART_COUNT']}\\n")
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
if os.environ["RANK"] == "1":
    while not os.path.exists(f"rank0_started_{attempt}"):   # fail once rank 0 has printed
        time.sleep(0.01)
    sys.exit(3)
open(f"rank0_started_{attempt}", "w").close()
time.sleep(20)
"""

RAISE_IN_RECORD = """
import os
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    if os.environ["RANK"] == "1":
        raise ValueError("boom from rank 1")

main()
"""


def _free_port():
    return free_port()


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PET_", "TORCHELASTIC_", "OMP_NUM_THREADS", "EMBER_TORCH"))}
    env["BASE_KEYS"] = json.dumps(sorted(env) + ["BASE_KEYS"])
    env.update(extra)
    return env


def _launch(cmd, tmp_path, script, args=(), script_args=(), env=None):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([*cmd, *args, str(path), *script_args], cwd=tmp_path,
                          env=env or _env(), capture_output=True, text=True, timeout=TIMEOUT)


def _envs(out):
    """Worker envs printed by PRINT_ENV, by RANK."""
    envs = [json.loads(line[4:]) for line in out.splitlines() if line.startswith("ENV ")]
    return {int(e["RANK"]): e for e in envs}


def _normalized(env):
    """A worker env without what differs run to run (ports, ids, temp paths)."""
    env = dict(env)
    run_id = env.pop("TORCHELASTIC_RUN_ID")
    error_file = env.pop("TORCHELASTIC_ERROR_FILE")
    parts = error_file.split(os.sep)
    assert parts[-3:] == ["attempt_0", env["LOCAL_RANK"], "error.json"]
    assert parts[-4].startswith(run_id + "_")
    assert env.pop("MASTER_PORT").isdigit()
    return env


# ---- CLI -------------------------------------------------------------------------------------
def test_parser_matches_torchrun(monkeypatch):
    from ember.distributed.run import get_args_parser, parse_args
    from torch.distributed import run as trun
    ours = {a.dest: (a.option_strings, a.default, a.nargs, a.choices, a.required)
            for a in get_args_parser()._actions}
    theirs = {a.dest: (a.option_strings, a.default, a.nargs, a.choices, a.required)
              for a in trun.get_args_parser()._actions}
    assert ours == theirs
    for argv in (["x.py"], ["--standalone", "--nproc_per_node", "3", "-m", "pkg.mod", "a", "--b"],
                 ["--nnodes=1:4", "--rdzv-backend=c10d", "--rdzv_endpoint=h:1", "--max_restarts",
                  "2", "--monitor-interval=0.5", "-r", "0:1,1:2", "-t", "3", "--no_python",
                  "--log_dir", "/tmp/l", "--local-ranks-filter=0", "run.sh", "--x"],
                 ["--node_rank=1", "--master-addr=10.0.0.1", "--master_port=1234", "--role=t",
                  "--run-path", "--start_method", "fork", "--local_addr", "a", "/abs/x.py"]):
        assert vars(parse_args(argv)) == vars(trun.parse_args(argv)), argv
    monkeypatch.setenv("PET_NPROC_PER_NODE", "4")
    monkeypatch.setenv("PET_MAX_RESTARTS", "3")
    monkeypatch.setenv("PET_STANDALONE", "1")
    assert vars(parse_args(["x.py"])) == vars(trun.parse_args(["x.py"]))


def test_bad_cli_values_raise_torchs_errors():
    from ember.distributed.run import determine_local_world_size, parse_min_max_nnodes
    from torch.distributed import run as trun
    assert determine_local_world_size("cpu") == trun.determine_local_world_size("cpu")
    assert parse_min_max_nnodes("2:5") == trun.parse_min_max_nnodes("2:5") == (2, 5)
    for fn, bad in ((parse_min_max_nnodes, "1:2:3"), (determine_local_world_size, "bogus")):
        with pytest.raises(Exception) as ours:
            fn(bad)
        with pytest.raises(Exception) as theirs:
            getattr(trun, fn.__name__)(bad)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)


def test_std_from_str_matches_torch():
    from ember.distributed.elastic.multiprocessing import Std
    from torch.distributed.elastic.multiprocessing import Std as TStd
    for vm in ("0", "1", "2", "3", "0:1,1:2", "1:3"):
        ours, theirs = Std.from_str(vm), TStd.from_str(vm)
        if isinstance(theirs, dict):
            assert {k: int(v) for k, v in ours.items()} == {k: v.value for k, v in theirs.items()}
        else:
            assert int(ours) == theirs.value


# ---- error reports -----------------------------------------------------------------------
def _report_body(text):
    """The report from its first '=' border, with times, pids, paths and widths masked."""
    text = text[text.index("\n=") + 1:]
    text = re.sub(r"^\S*/(\S+ FAILED)$", r"\1", text, flags=re.M)
    text = re.sub(r"(time      : ).*", r"\1T", text)
    text = re.sub(r"(pid: |PID )\d+", r"\1P", text)
    text = re.sub(r"(error_file: )/\S+", r"\1F", text)
    text = re.sub(r"^=+$", "=", text, flags=re.M)
    return re.sub(r"^-+$", "-", text, flags=re.M)


def test_child_failed_error_format_matches_torch(tmp_path):
    from ember.distributed.elastic.multiprocessing.errors import (ChildFailedError,
                                                                  ProcessFailure)
    from torch.distributed.elastic.multiprocessing import errors as terr
    err = tmp_path / "error.json"
    err.write_text(json.dumps({"message": {"message": "ValueError: x", "extraInfo": {
        "py_callstack": "Traceback (most recent call last):\n  File \"a.py\", line 1\n"
                        "ValueError: x\n", "timestamp": "100"}}}))
    rows = [(3, 0, 41, 1, str(err)), (2, 1, 42, -9, ""), (0, 2, 43, -15, ""), (1, 3, 44, 2, "")]
    ours = ChildFailedError("train.py", {g: ProcessFailure(lr, pid, code, ef)
                                         for g, lr, pid, code, ef in rows})
    theirs = terr.ChildFailedError("train.py", {g: terr.ProcessFailure(lr, pid, code, ef)
                                                for g, lr, pid, code, ef in rows})
    assert ours.get_first_failure()[0] == theirs.get_first_failure()[0] == 3
    assert _report_body(str(ours)) == _report_body(str(theirs))
    assert str(ours).count("=") == str(theirs).count("=")


def test_record_writes_torchs_error_file(tmp_path, monkeypatch):
    from ember.distributed.elastic.multiprocessing.errors import record
    from torch.distributed.elastic.multiprocessing.errors import record as trecord

    def boom():
        raise KeyError("missing")

    files = {}
    for name, rec in (("ours", record), ("theirs", trecord)):
        files[name] = tmp_path / f"{name}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(files[name]))
        with pytest.raises(KeyError):
            rec(boom)()
    ours, theirs = (json.loads(files[n].read_text()) for n in ("ours", "theirs"))
    assert ours["message"]["message"] == theirs["message"]["message"] == "KeyError: 'missing'"
    assert ours["message"].keys() == theirs["message"].keys()
    assert ours["message"]["extraInfo"].keys() == theirs["message"]["extraInfo"].keys()
    tail = 'raise KeyError("missing")\nKeyError: \'missing\'\n'
    assert ours["message"]["extraInfo"]["py_callstack"].endswith(tail)
    assert theirs["message"]["extraInfo"]["py_callstack"].endswith(tail)
    assert record(lambda: 7)() == 7


# ---- launches ---------------------------------------------------------------------------------
def test_standalone_two_workers_env_matches_torchrun(tmp_path):
    args = ["--standalone", "--nproc-per-node=2"]
    ours = _launch(LAUNCHER, tmp_path, PRINT_ENV, args, ["a", "--b"])
    theirs = _launch(TORCHRUN, tmp_path, PRINT_ENV, args, ["a", "--b"])
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    ours_env, theirs_env = _envs(ours.stdout), _envs(theirs.stdout)
    assert sorted(ours_env) == sorted(theirs_env) == [0, 1]
    for rank in (0, 1):
        assert _normalized(ours_env[rank]) == _normalized(theirs_env[rank])
    assert ours_env[0]["MASTER_PORT"] == ours_env[1]["MASTER_PORT"]
    assert ours.stdout.count('ARGV ["a", "--b"]') == 2
    assert "Setting OMP_NUM_THREADS environment variable" in ours.stderr


def test_static_single_node_env_matches_torchrun(tmp_path):
    port = str(_free_port())
    args = ["--nproc-per-node=1", f"--master-port={port}", "--max-restarts=2", "--role=trainer"]
    ours = _launch(LAUNCHER, tmp_path, PRINT_ENV, args)
    theirs = _launch(TORCHRUN, tmp_path, PRINT_ENV, args)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    o, t = _envs(ours.stdout)[0], _envs(theirs.stdout)[0]
    assert o["MASTER_PORT"] == t["MASTER_PORT"] == port
    assert _normalized(o) == _normalized(t)
    assert "OMP_NUM_THREADS" not in o


def _two_agents(cmd, tmp_path, script, options=None):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    options = options or ["--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
                          f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=job",
                          "--monitor-interval=0.05"]
    args = [*cmd, *options, str(path)]
    procs = [subprocess.Popen(args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        outs.append((p.returncode, out, err))
    return outs


def test_two_agents_c10d_form_world_of_four_like_torchrun(tmp_path):
    ours = _two_agents(LAUNCHER, tmp_path, PRINT_ENV)
    theirs = _two_agents(TORCHRUN, tmp_path, PRINT_ENV)
    assert [rc for rc, _, _ in ours] == [0, 0], ours[0][2] + ours[1][2]
    ours_env = {r: e for _, out, _ in ours for r, e in _envs(out).items()}
    theirs_env = {r: e for _, out, _ in theirs for r, e in _envs(out).items()}
    assert sorted(ours_env) == sorted(theirs_env) == [0, 1, 2, 3]
    assert {e["MASTER_PORT"] for e in ours_env.values()} != {""}
    assert len({e["MASTER_PORT"] for e in ours_env.values()}) == 1
    for rank in range(4):
        assert _normalized(ours_env[rank]) == _normalized(theirs_env[rank])
        assert ours_env[rank]["GROUP_RANK"] == str(rank // 2)


def test_failed_worker_restarts_then_reports_like_torchrun(tmp_path):
    args = ["--standalone", "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.05"]
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    ours = _launch(LAUNCHER, tmp_path / "ours", EXIT_OR_SLEEP, args)
    theirs = _launch(TORCHRUN, tmp_path / "theirs", EXIT_OR_SLEEP, args)
    assert ours.returncode == theirs.returncode == 1
    for out in (ours.stdout, theirs.stdout):
        assert sorted(out.splitlines()) == [f"rank {r} restart {k}" for r in "01" for k in "01"]
    assert "ChildFailedError" in ours.stderr
    body = _report_body(ours.stderr)
    assert body == _report_body(theirs.stderr)
    assert "rank      : 1 (local_rank: 1)\n  exitcode  : 3 (pid: P)" in body


def test_record_error_file_reaches_the_report(tmp_path):
    cmd = [sys.executable, "-m", "ember.run", "-m", "torch.distributed.run"]
    ours = _launch(cmd, tmp_path, RAISE_IN_RECORD, ["--standalone", "--nproc-per-node=2"])
    assert ours.returncode == 1
    body = _report_body(ours.stderr)
    root = body[body.index("Root Cause"):]
    assert "rank      : 1 (local_rank: 1)" in root
    assert "error_file: F" in root
    assert 'raise ValueError("boom from rank 1")\n  ValueError: boom from rank 1' in root
    assert "ember/distributed/elastic/multiprocessing/errors" in root   # ember's record ran:
    # the workers inherited ember.run's aliasing (torch.distributed.elastic -> ember's)


def test_legacy_launch_passes_local_rank(tmp_path):
    """torch.distributed.launch gives argv ['--local-rank=N', 'x'] and warns (probed)."""
    cmd = [sys.executable, "-m", "ember.distributed.launch"]
    res = _launch(cmd, tmp_path, PRINT_ENV,
                  ["--nproc-per-node=2", f"--master-port={_free_port()}"], ["x"])
    assert res.returncode == 0, res.stderr
    argvs = sorted(line for line in res.stdout.splitlines() if line.startswith("ARGV"))
    assert argvs == ['ARGV ["--local-rank=0", "x"]', 'ARGV ["--local-rank=1", "x"]']
    assert "FutureWarning: The module torch.distributed.launch is deprecated" in res.stderr
    res = _launch(cmd, tmp_path, PRINT_ENV, ["--use-env", f"--master-port={_free_port()}"],
                  ["x"])
    assert res.returncode == 0 and 'ARGV ["x"]' in res.stdout
    from ember.distributed.launch import parse_args
    from torch.distributed.launch import parse_args as tparse
    argv = ["--use_env", "--nproc_per_node=2", "x.py", "--y"]
    assert vars(parse_args(argv)) == vars(tparse(argv))


def test_no_python_and_module_modes(tmp_path):
    (tmp_path / "pkg_mod.py").write_text("import os, sys\nprint('MOD', os.environ['RANK'], "
                                         "sys.argv[1:])\n")
    res = subprocess.run([*LAUNCHER, "--standalone", "-m", "pkg_mod", "a"], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0 and "MOD 0 ['a']" in res.stdout, res.stderr
    res = subprocess.run([*LAUNCHER, "--standalone", "--no-python", "sh", "-c",
                          "echo SH $RANK $WORLD_SIZE"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0 and "SH 0 1" in res.stdout, res.stderr


def test_log_dir_redirects_and_tee(tmp_path):
    script = "import os, sys\nprint('out', os.environ['RANK'])\n" \
             "print('err', os.environ['RANK'], file=sys.stderr)\n"
    log_dir = tmp_path / "logs"
    res = _launch(LAUNCHER, tmp_path, script,
                  ["--standalone", "--nproc-per-node=2", f"--log-dir={log_dir}", "-r", "2",
                   "-t", "1"])
    assert res.returncode == 0, res.stderr
    (run_dir,) = log_dir.iterdir()
    files = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
    assert files == [f"attempt_0/{r}/{s}.log" for r in "01" for s in ("stderr", "stdout")]
    for r in "01":
        assert (run_dir / f"attempt_0/{r}/stdout.log").read_text() == f"out {r}\n"
        assert (run_dir / f"attempt_0/{r}/stderr.log").read_text() == f"err {r}\n"
        assert f"[default{r}]:out {r}" in res.stdout
    assert "err 0" not in res.stderr
    res = _launch(LAUNCHER, tmp_path, script,
                  ["--standalone", "--nproc-per-node=2", "--local-ranks-filter=1"])
    assert res.returncode == 0, res.stderr
    assert "out 1" in res.stdout and "out 0" not in res.stdout     # as torchrun (probed)


TRAIN = """
import os, sys
import torch
import torch.distributed as dist

STEPS = 6
ckpt = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
start, w = 0, torch.zeros(3)
if os.path.exists(ckpt):
    state = torch.load(ckpt)
    start, w = state["step"], state["w"]
    sys.stdout.write(f"RESUME {rank} {start}\\n")
for step in range(start, STEPS):
    t = torch.full((3,), float((rank + 1) * (step + 1)))
    dist.all_reduce(t)
    w = w * 0.5 + t
    if rank == 0:
        torch.save({"step": step + 1, "w": w}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    dist.barrier()
    if rank == 1 and step == 3 and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
        os.kill(os.getpid(), 9)
sys.stdout.write(f"FINAL {rank} {os.environ['TORCHELASTIC_RESTART_COUNT']} {w.tolist()}\\n")
dist.destroy_process_group()
"""


def test_training_killed_worker_restarts_from_checkpoint(tmp_path):
    """Rank 1 SIGKILLs itself after step 4 of 6 in the first attempt; the agent restarts
    the group, which resumes from rank 0's checkpoint to the uninterrupted result."""
    cmd = [sys.executable, "-m", "ember.run", "-m", "torch.distributed.run"]
    res = _launch(cmd, tmp_path, TRAIN, ["--standalone", "--nproc-per-node=2",
                                          "--max-restarts=1", "--monitor-interval=0.05"],
                  [str(tmp_path / "ckpt.pt")])
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(line for line in res.stdout.splitlines() if line.startswith("RESUME")) == \
        ["RESUME 0 4", "RESUME 1 4"]
    w = np.zeros(3, np.float32)
    for step in range(6):
        w = w * np.float32(0.5) + np.float32((1 + 2) * (step + 1))
    finals = sorted(line for line in res.stdout.splitlines() if line.startswith("FINAL"))
    assert finals == [f"FINAL {r} 1 {w.tolist()}" for r in (0, 1)]


def test_node_joining_between_rounds_restarts_group_without_using_restarts(tmp_path):
    """--nnodes=1:2: agent A runs alone (world 1); agent B arrives, A's workers are stopped
    and both re-rendezvous into world 2 (a membership change is not a restart)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        world = os.environ["WORLD_SIZE"]
        sys.stdout.write(f"world {world} restart {os.environ['TORCHELASTIC_RESTART_COUNT']}\\n")
        if world == "1":
            open(os.path.join(os.path.dirname(__file__), "alone"), "w").close()
            time.sleep(30)
    """))
    args = [*LAUNCHER, "--nnodes=1:2", "--nproc-per-node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=elastic",
            "--rdzv-conf=last_call_timeout=1", "--monitor-interval=0.05", str(script)]
    popen = dict(cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True)
    first = subprocess.Popen(args, **popen)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (tmp_path / "alone").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.05)
        second = subprocess.run(args, timeout=TIMEOUT, **popen)
        out, err = first.communicate(timeout=TIMEOUT)
    finally:
        first.kill()
    assert first.returncode == second.returncode == 0, err + second.stderr
    assert out.splitlines() == ["world 1 restart 0", "world 2 restart 0"]
    assert second.stdout.splitlines() == ["world 2 restart 0"]


def test_failure_on_one_node_restarts_both_nodes(tmp_path):
    """Rank 1 (one agent) exits 3 in attempt 0; the other agent sees the new round on the
    rendezvous store, stops its worker, and both groups run attempt 1 to success."""
    script = """
    import os, sys, time
    rank, attempt = os.environ["RANK"], os.environ["TORCHELASTIC_RESTART_COUNT"]
    sys.stdout.write(f"rank {rank} restart {attempt} world {os.environ['WORLD_SIZE']}\\n")
    if attempt == "0":
        if rank == "1":
            while not os.path.exists("rank0_started"):      # fail once rank 0 has printed
                time.sleep(0.01)
            sys.exit(3)
        open("rank0_started", "w").close()
        time.sleep(30)
    """
    args = ["--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d", "--max-restarts=1",
            f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=job",
            "--monitor-interval=0.05"]
    outs = _two_agents(LAUNCHER, tmp_path, script, args)
    assert [rc for rc, _, _ in outs] == [0, 0], outs[0][2] + outs[1][2]
    lines = sorted(line for _, out, _ in outs for line in out.splitlines())
    assert lines == [f"rank {r} restart {k} world 2" for r in "01" for k in "01"]


def test_elastic_launch_of_a_function_returns_its_values(tmp_path):
    """launcher.api.elastic_launch with a picklable function (spawn-style): {rank: return
    value} as torch returns; an exception in a worker surfaces as ChildFailedError."""
    script = """
    import os
    from ember.distributed.launcher.api import LaunchConfig, elastic_launch
    from ember.distributed.elastic.multiprocessing.errors import ChildFailedError

    def train(scale, fail_rank=None):
        rank = int(os.environ["RANK"])
        if rank == fail_rank:
            raise ValueError(f"rank {rank} failed")
        return {"rank": rank, "value": rank * scale}

    if __name__ == "__main__":
        cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2, rdzv_backend="c10d",
                           rdzv_endpoint="localhost:0", max_restarts=0)
        print("RESULT", elastic_launch(cfg, train)(10))
        try:
            elastic_launch(cfg, train)(10, 1)
        except ChildFailedError as e:
            rank, failure = e.get_first_failure()
            print("FAILED", rank, failure.message.splitlines()[-1])
    """
    res = _launch([sys.executable], tmp_path, script)
    assert res.returncode == 0, res.stderr
    assert "RESULT {0: {'rank': 0, 'value': 0}, 1: {'rank': 1, 'value': 10}}" in res.stdout
    assert "FAILED 1 ValueError: rank 1 failed" in res.stdout
