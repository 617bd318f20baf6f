"""python -m ember.run: unmodified torch scripts on ember."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tmp_path, body, *args, name="script.py"):
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT
    env.pop("EMBER_TORCH_ALIAS", None)
    return subprocess.run([sys.executable, "-m", "ember.run", str(script), *args],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=120)


def test_simple_script(tmp_path):
    r = _run(tmp_path, """
        import torch
        print(torch.ones(2).sum().item())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2.0"


def test_argv_name_and_submodules(tmp_path):
    r = _run(tmp_path, """
        import sys
        import torch
        import torch.utils.data
        from torch.utils.data import DataLoader, TensorDataset
        import torch.nn.functional as F
        print(sys.argv[1:], __name__, torch.__name__, torch.utils.data.__name__)
        print([b[0].tolist() for b in DataLoader(TensorDataset(torch.arange(4.)), batch_size=2)])
    """, "--lr", "0.1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "['--lr', '0.1'] __main__ ember ember.utils.data"
    assert lines[1] == "[[0.0, 1.0], [2.0, 3.0]]"


def test_missing_module_named(tmp_path):
    r = _run(tmp_path, """
        import torch
        import torch.definitely_missing
    """, name="train.py")
    assert r.returncode != 0
    assert "ModuleNotFoundError: ember does not provide torch.definitely_missing " \
           "(needed by train.py)" in r.stderr


def test_spawned_workers_see_ember(tmp_path):
    r = _run(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                import torch as t2
                return t2.__name__, i

        if __name__ == "__main__":
            dl = DataLoader(DS(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
            print([b[0] for b in dl])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[('ember', 'ember'), ('ember', 'ember')]"


def test_save_load_in_script(tmp_path):
    r = _run(tmp_path, """
        import torch
        torch.save({"w": torch.arange(3.)}, "ck.pt")
        print(torch.load("ck.pt")["w"].tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 1.0, 2.0]"
    import torch
    assert torch.load(tmp_path / "ck.pt")["w"].tolist() == [0.0, 1.0, 2.0]


def test_install_in_process():
    from ember import run
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    try:
        run.install()
        import importlib
        m = importlib.import_module("torch.utils.data")
        assert m.__name__ == "ember.utils.data"
        with pytest.raises(ModuleNotFoundError, match="ember does not provide torch.nope"):
            importlib.import_module("torch.nope")
    finally:
        run.uninstall()
        sys.modules.update(saved)
    import torch
    assert torch.__name__ == "torch"


def test_class_names_print_as_torch(tmp_path):
    """Note [torch's class names] in ember/run.py: ``type(x)`` prints torch's names, and
    pickles of those classes still load."""
    body = """
        import pickle
        import torch
        t = torch.ones(2)
        print(type(t), type(torch.float32), type(torch.device("cpu")), type(t.shape))
        print(type(torch.nn.Parameter(t)), torch.Tensor.__module__)
        print(pickle.loads(pickle.dumps(torch.Tensor)) is torch.Tensor,
              pickle.loads(pickle.dumps(t)).tolist())
        print(torch.nn.Parameter(torch.ones(1)))
    """
    r = _run(tmp_path, body)
    assert r.returncode == 0, r.stderr
    script = tmp_path / "ref.py"
    script.write_text(textwrap.dedent(body))
    pytest.importorskip("torch")
    ref = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert r.stdout == ref.stdout
