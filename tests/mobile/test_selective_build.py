"""The lite runtime stands alone (NumPy only): it runs in a subprocess where ``ember``
cannot be imported; a selective build holds only a model's operators and refuses a model
needing another one, naming it."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.lite import build as lite_build
from ember.vision.models import mobilenet_v2

from ._models import CNN, seeded

HERE = os.path.dirname(os.path.abspath(__file__))
LITE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "ember_lite")

# a finder that makes every ``import ember`` fail, installed before anything else runs
BLOCK = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name == "ember" or name.startswith("ember."):
                raise ImportError("ember is blocked in this process")
    sys.meta_path.insert(0, _Block())
""")


def _run(code, tmp_path, pkg_dir):
    script = tmp_path / "run.py"
    script.write_text(BLOCK + f"sys.path.insert(0, {str(pkg_dir)!r})\n" + textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=str(tmp_path), env=env)


def _save(m, path):
    ember.jit.script(m)._save_for_lite_interpreter(str(path))


@pytest.fixture(scope="module")
def mobilenet():
    ember.manual_seed(0)
    return mobilenet_v2(num_classes=10).eval()


def test_full_runtime_imports_nothing_from_ember(tmp_path):
    pkg = tmp_path / "pkgs"
    shutil.copytree(LITE, pkg / "ember_lite", ignore=shutil.ignore_patterns("__pycache__"))
    m = seeded(CNN)
    _save(m, tmp_path / "cnn.ptl")
    x = np.random.RandomState(0).randn(2, 3, 10, 10).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", m(ember.from_numpy(x)).detach().numpy())
    r = _run("""
        import numpy as np, ember_lite
        y = ember_lite.load("cnn.ptl")(np.load("x.npy"))
        np.testing.assert_allclose(y, np.load("want.npy"), rtol=1e-4, atol=1e-6)
        assert not any(k == "ember" or k.startswith("ember.") for k in sys.modules)
        try:
            import ember
        except ImportError:
            print("OK")
    """, tmp_path, pkg)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK"


def test_selective_build_runs_its_model_and_refuses_others(tmp_path, mobilenet):
    s = ember.jit.script(mobilenet)
    ops = ember.jit.export_opnames(s)
    (tmp_path / "ops.yaml").write_text("".join(f"- {op}\n" for op in ops))   # yaml.dump's form
    s._save_for_lite_interpreter(str(tmp_path / "mnv2.ptl"))
    _save(seeded(CNN), tmp_path / "cnn.ptl")
    x = np.random.RandomState(0).randn(1, 3, 64, 64).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", mobilenet(ember.from_numpy(x)).detach().numpy())
    out = tmp_path / "build"
    root = os.path.dirname(os.path.dirname(HERE))
    b = subprocess.run([sys.executable, "-m", "ember.lite.build", "--ops", str(tmp_path / "ops.yaml"),
                        "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=root)
    assert b.returncode == 0, b.stderr
    built = out / "ember_lite"
    size = sum(os.path.getsize(built / f) for f in os.listdir(built))
    assert size < 200_000
    kernels = (built / "_kernels.py").read_text()
    assert "'aten::conv2d'" in kernels and "max_pool2d" not in kernels
    r = _run("""
        import numpy as np, ember_lite
        m = ember_lite.load("mnv2.ptl")
        y = m(np.load("x.npy"))
        np.testing.assert_allclose(y, np.load("want.npy"), rtol=1e-4, atol=1e-9)
        print(sorted(ember_lite.KERNELS) == sorted(set(m.operator_names())))
        try:
            ember_lite.load("cnn.ptl")
        except RuntimeError as e:
            print(e)
    """, tmp_path, out)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.strip().split("\n")
    assert first == "True"
    assert "aten::max_pool2d" in second and "aten::relu" in second and "conv2d" not in second


def test_op_list_formats_and_unknown_operator(tmp_path):
    assert lite_build.read_op_list("- aten::conv2d\n- 'aten::add.Tensor'\n") == \
        ["aten::conv2d", "aten::add.Tensor"]
    text = ("operators:\n  aten::add.Tensor:\n    is_root_operator: true\n    debug_info:\n"
            "      - model.ptl\n  aten::linear:\n    is_root_operator: true\nkernel_metadata: {}\n")
    assert lite_build.read_op_list(text) == ["aten::add.Tensor", "aten::linear"]
    with pytest.raises(SystemExit, match="aten::no_such_op"):
        lite_build.build(["aten::linear", "aten::no_such_op"], str(tmp_path))
    target = lite_build.build(["aten::linear"], str(tmp_path))
    assert sorted(os.listdir(target)) == ["OPERATORS", "__init__.py", "_format.py", "_interp.py",
                                          "_kernels.py"]
