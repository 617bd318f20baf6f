"""jit.load without torch: archives written here by real torch load and run in a
subprocess where ``import torch`` fails; its outputs (numpy files) match torch's."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, num_layers=2, batch_first=True)
        self.head = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 2))

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


from .test_load import Forks, ResNet18  # noqa: E402  (resnet18's layout, narrow; forks)

_CHILD = textwrap.dedent("""
    import importlib.abc, sys

    class BlockTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision"):
                raise ImportError("torch is blocked in this process: " + name)
            return None

    sys.meta_path.insert(0, BlockTorch())
    sys.modules["torch"] = None
    try:
        import torch
    except ImportError:
        pass
    else:
        raise SystemExit("torch import was not blocked")

    import numpy as np
    import ember
    from ember.jit._serialization_load import load

    folder = sys.argv[1]
    for name in sys.argv[2:]:
        m = load(f"{folder}/{name}.pt")
        m.eval()
        x = ember.tensor(np.load(f"{folder}/{name}_in.npy"))
        np.save(f"{folder}/{name}_out.npy", m(x).detach().numpy())
    assert sys.modules.get("torch") is None
    print("ok")
""")


def test_torch_archives_run_without_torch(tmp_path):
    torch.manual_seed(0)
    cases = {"net": (Net().eval(), torch.randn(2, 3, 8, 8)),
             "seq": (Seq().eval(), torch.randn(3, 6, 4)),
             "resnet18": (ResNet18().eval(), torch.randn(1, 3, 32, 32)),
             "forks": (Forks().eval(), torch.randn(2, 4))}
    refs = {}
    for name, (module, x) in cases.items():
        scripted = torch.jit.script(module)
        scripted.save(str(tmp_path / f"{name}.pt"))
        np.save(tmp_path / f"{name}_in.npy", x.numpy())
        refs[name] = torch.jit.load(str(tmp_path / f"{name}.pt"))(x).detach().numpy()
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.run([sys.executable, str(child), str(tmp_path), *cases], env=env,
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok")
    for name, ref in refs.items():
        out = np.load(tmp_path / f"{name}_out.npy")
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
