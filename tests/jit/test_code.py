"""``.code`` prints TorchScript in torch's style: the same source scripted by ember and by
torch prints the same text; the printed code of other constructs uses torch's forms
(``annotate``, ``unchecked_cast``, ``ops.prim.RaiseException``, ``(l).forward(x, )``)."""
import re
import importlib
import sys
from typing import List, Optional

import pytest

import ember
from ember import nn

SRC = '''
from typing import Any, Dict, List, NamedTuple, Optional


class Pair(NamedTuple):
    first: torch.Tensor
    second: int


def named(x, n: int) -> Pair:
    return Pair(x + n, n * 2)


def helper(x, k: int = 2):
    return x * k + 1


def calls(x):
    return helper(x) + helper(x, 3)


def strings(x, name: str):
    s = f"{name}-{x.dim()}"
    parts = s.split("-")
    t = "{}:{}".format(parts[0], len(parts))
    if t.startswith("ab"):
        return x + 1, t
    return x - 1, t.upper()


def nograd(x):
    with torch.no_grad():
        y = x * 2
    return y + 1


def branches(x, n: int):
    if n > 2:
        y = x * 2
    else:
        y = x + 1
    return torch.relu(y).sum(dim=1, keepdim=True)


def lists(x, n: int) -> List[int]:
    out: List[int] = []
    for i in range(n):
        out.append(i * 2)
    return out


def refine(x, k: Optional[int] = None):
    if k is None:
        k = 3
    return x * k


def raises(x, n: int):
    if n < 0:
        raise ValueError("negative: {}".format(n))
    return x


def floats(x, eps: float = 1e-5):
    return x * 0.1 + eps, float("inf")


def dynamic(x: Any, n: int):
    if isinstance(x, int):
        return 1 + n
    return 3


def indexing(x, i: int):
    y = x[0, 1:] + x[:, None].sum() + x[::2].sum() + x[i]
    return y, x[1:3, :2]


def list_calls(xs: List[int], d: Dict[str, int]):
    ys = sorted(xs)
    ys.insert(0, 9)
    ys.append(len(d))
    d["k"] = ys[0]
    return ys, d


def long_message(x, n: int):
    if n < 0:
        raise ValueError("a message long enough to be assigned first: {}".format(n))
    return x


def forked(x):
    fut = torch.jit.fork(helper, x, 2)
    return torch.jit.wait(fut)
'''

SAME = ["helper", "calls", "strings", "nograd", "branches", "lists", "refine", "raises",
        "floats", "dynamic", "forked", "named", "indexing", "list_calls", "long_message"]


def _load(root, header):
    """Import SRC as module ``jit_code_src`` with ``torch`` bound by ``header``."""
    root.mkdir()
    (root / "jit_code_src.py").write_text(header + "\n" + SRC)
    sys.path.insert(0, str(root))
    try:
        sys.modules.pop("jit_code_src", None)
        return importlib.import_module("jit_code_src")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("jit_code_src", None)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    torch = pytest.importorskip("torch")
    base = tmp_path_factory.mktemp("code")
    e = _load(base / "ember_side", "import ember as torch")
    t = _load(base / "torch_side", "import torch")
    return e, t, torch


@pytest.mark.parametrize("name", SAME)
def test_code_matches_torch(sources, name):
    e, t, torch = sources
    assert ember.jit.script(getattr(e, name)).code == torch.jit.script(getattr(t, name)).code


def test_module_code_matches_torch(sources):
    torch = sources[2]
    want = torch.jit.script(torch.nn.Linear(3, 2)).code
    assert ember.jit.script(nn.Linear(3, 2)).code == want


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)
        self.sizes = [1, 2]

    def forward(self, x, k: Optional[int] = None):
        if k is not None:
            x = x * k
        xs: List[int] = []
        for s in self.sizes:
            xs.append(s)
        return self.l(x), xs


def test_torch_forms_in_module_code():
    code = ember.jit.script(Sub()).code
    assert code.startswith("def forward(self,\n    x: Tensor,\n    k: Optional[int]=None) ->")
    assert "unchecked_cast(int, k)" in code
    assert "annotate(List[int], [])" in code
    assert "(l).forward(" in code and "l = self.l" in code
    assert "torch.append(xs, " in code


def test_class_body_like_torch_archive(sources):
    torch = sources[2]
    from ember.jit import _printer
    s = ember.jit.script(nn.Linear(3, 2))
    ctx = _printer.PrintContext()
    body = _printer.class_code(s._ct, ctx, "Linear").splitlines()
    import io
    import zipfile
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 2)), buf)
    z = zipfile.ZipFile(buf)
    # torch mangles the path and names when a Linear of another shape scripted before
    name = next(n for n in z.namelist() if "nn/modules/linear" in n and n.endswith(".py"))
    want = re.sub(r"___torch_mangle_\d+\.", "", z.read(name).decode()).splitlines()
    want = [line for line in want if "_is_full_backward_hook" not in line]
    assert body[:6] == want[:6]              # class line, __parameters__, __buffers__, attrs
    assert sorted(body[6:8]) == sorted(want[6:8])     # Final constants (torch: set order)
    assert body[8:] == want[8:]              # the method


def test_python_call_shown_as_torch_does():
    class M(nn.Module):
        @ember.jit.ignore
        def py(self, x: ember.Tensor) -> ember.Tensor:
            return x

        def forward(self, x):
            return self.py(x) + 1
    assert ember.jit.script(M()).code.endswith("  return torch.add(^py()(x), 1)\n")


def test_unprintable_raises():
    from ember.jit import _printer
    from ember.jit._ir import Graph, Node
    from ember.jit._script import Function
    from ember.jit import _types as T
    g = Graph()
    x = g.add_input(T.TensorType, "x")
    node = g.block.append(Node("prim::CallAny", [x], {"name": "mystery"}))
    g.block.set_returns([node.add_output(T.AnyType)])
    fn = Function("f", "__torch__.f", g, [("x", T.TensorType, False, None, False)], T.AnyType)
    with pytest.raises(NotImplementedError, match="CallAny"):
        _printer.function_code(fn)
