"""Enums in TorchScript: a Python ``enum.Enum`` as argument type, default, module attribute,
constant, loop range and result; ``==``/``!=``, ``.value``/``.name``; graphs, ``.code``
and archives (ember <-> torch). The same source is scripted by ember and by torch (when
installed); then ``ember.vision.io``'s functions scripted as the PyTorch 1.7 announcement
does (``torch.jit.script(read_image)``), equal to eager."""
from __future__ import annotations

import importlib.util
import io
import sys
import zipfile

import numpy as np
import pytest

import ember
from ember.vision import io as eio

_SRC = '''
import enum
from typing import Dict, List, Optional

import torch  # HEADER


class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 4


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Scale(enum.Enum):
    HALF = 0.5
    DOUBLE = 2.0


def compare_value(x: Color, t: torch.Tensor) -> torch.Tensor:
    if x == Color.RED:
        return t + x.value
    return t * 2


def default_name(x: Color = Color.GREEN) -> str:
    return x.name


def iterate() -> List[int]:
    r: List[int] = []
    for c in Color:
        r.append(c.value)
    return r


def returns_enum(s: Mode) -> Color:
    if s != Mode.FAST:
        return Color.RED
    return Color.BLUE


def str_value(s: Mode) -> str:
    return s.value + "!"


def float_value(s: Scale, t: torch.Tensor) -> torch.Tensor:
    return t * s.value


def names_of(xs: List[Color]) -> List[str]:
    return [x.name for x in xs]


def optional_arg(c: Optional[Color] = None) -> int:
    if c is not None:
        return c.value
    return -1


def dict_of(d: Dict[str, Color]) -> str:
    return d["a"].name


def member_constants() -> int:
    return Color.RED.value + Color.BLUE.value


class WithList(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cs = [Color.RED, Color.BLUE]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c in self.cs:
            x = x * c.value
        return x


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = Color.GREEN

    def forward(self, x: torch.Tensor, c: Color = Color.RED) -> torch.Tensor:
        r = x
        for k in Color:
            if k == c:
                r = r + k.value
        if c == self.c:
            return r * c.value
        return r - 1
'''


def _load(tmp_dir, flavour):
    src = _SRC if flavour == "torch" else _SRC.replace("import torch  # HEADER",
                                                       "import ember as torch  # HEADER")
    name = f"enum_src_{flavour}"
    path = tmp_dir / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def em(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("enum"), "ember")


@pytest.fixture(scope="module")
def tm(tmp_path_factory):
    pytest.importorskip("torch")
    return _load(tmp_path_factory.mktemp("enum"), "torch")


def _norm(text, flavour):
    """Graph/code text with the module name and value numbering made comparable."""
    import re
    text = text.replace(f"enum_src_{flavour}", "SRC")
    text = re.sub(r" # \S+:\d+:\d+", "", text)
    return re.sub(r"%[\w.]+", "%v", text)


def _member(mod, cls, name):
    return getattr(getattr(mod, cls), name)


@pytest.mark.parametrize("fn,args", [
    ("compare_value", [("Color", "RED"), 3.0]), ("compare_value", [("Color", "BLUE"), 3.0]),
    ("default_name", []), ("default_name", [("Color", "BLUE")]), ("iterate", []),
    ("returns_enum", [("Mode", "FAST")]), ("returns_enum", [("Mode", "SLOW")]),
    ("str_value", [("Mode", "SLOW")]), ("float_value", [("Scale", "HALF"), 3.0]),
    ("names_of", [[("Color", "BLUE"), ("Color", "RED")]]),
    ("optional_arg", []), ("optional_arg", [("Color", "BLUE")]),
    ("dict_of", [{"a": ("Color", "GREEN")}]), ("member_constants", []),
])
def test_functions_match_torch(em, tm, fn, args):
    import torch

    def build(mod, lib):
        def one(a):
            if isinstance(a, tuple):
                return _member(mod, *a)
            if isinstance(a, list):
                return [one(x) for x in a]
            if isinstance(a, dict):
                return {k: one(x) for k, x in a.items()}
            return lib.full((2,), a)
        return [one(a) for a in args]

    ours = ember.jit.script(getattr(em, fn))(*build(em, ember))
    theirs = torch.jit.script(getattr(tm, fn))(*build(tm, torch))
    eager = getattr(em, fn)(*build(em, ember))
    for got in (ours, eager):
        if isinstance(theirs, torch.Tensor):
            np.testing.assert_allclose(got.numpy(), theirs.numpy())
        elif hasattr(theirs, "name") and not isinstance(theirs, str):
            assert (type(got).__name__, got.name) == (type(theirs).__name__, theirs.name)
        else:
            assert got == theirs


@pytest.mark.parametrize("fn", ["compare_value", "default_name", "returns_enum", "str_value"])
def test_graph_and_code_match_torch(em, tm, fn):
    import torch
    ours, theirs = ember.jit.script(getattr(em, fn)), torch.jit.script(getattr(tm, fn))
    assert _norm(ours.code, "ember") == _norm(theirs.code, "torch")
    # the same typed values (Enum<__torch__.SRC.Color>...) and node kinds, in any order
    def kinds(g, flavour):
        return sorted(line.split("=", 1)[1].split("(")[0].split("[")[0].strip()
                      for line in _norm(str(g), flavour).splitlines() if " = " in line)

    def types(g, flavour):
        import re
        return sorted(set(re.findall(r"Enum<[\w.]+>", _norm(str(g), flavour))))
    assert types(ours.graph, "ember") == types(theirs.graph, "torch")
    ours_k = [k for k in kinds(ours.graph, "ember") if k != "prim::Constant"]
    theirs_k = [k for k in kinds(theirs.graph, "torch") if k != "prim::Constant"]
    assert ours_k == theirs_k


def test_graph_kinds(em):
    g = str(ember.jit.script(em.compare_value).graph)
    assert "%x : Enum<__torch__.enum_src_ember.Color>" in g
    assert "prim::Constant[value=__torch__.enum_src_ember.Color.RED]()" in g
    assert "int = prim::EnumValue(%x)" in g and "bool = aten::eq(%x, " in g
    assert "str = prim::EnumName(%x)" in str(ember.jit.script(em.default_name).graph)
    assert "float = prim::EnumValue" in str(ember.jit.script(em.float_value).graph)


def test_errors(em, tm):
    import enum
    import torch
    f = ember.jit.script(em.default_name)
    with pytest.raises(RuntimeError, match="Expected a value of type"):
        f(1)
    with pytest.raises(RuntimeError):
        torch.jit.script(tm.default_name)(1)
    assert f.schema == "default_name(Enum<__torch__.enum_src_ember.Color> x=Enum<Color.GREEN>) -> str"
    assert str(torch.jit.script(tm.default_name).schema) == f.schema.replace("ember", "torch")

    class Mixed(enum.Enum):
        A = 1
        B = "b"
    from ember.jit import _types as T
    with pytest.raises(T.AnnotationError, match="Could not unify type list"):
        T.enum_type(Mixed)


def test_module_and_archives(em, tm, tmp_path):
    import torch
    ours, theirs = ember.jit.script(em.M()), torch.jit.script(tm.M())
    x, tx = ember.ones(2), torch.ones(2)
    for c in ("RED", "GREEN", "BLUE"):
        np.testing.assert_allclose(ours(x, _member(em, "Color", c)).numpy(),
                                   theirs(tx, _member(tm, "Color", c)).numpy())
    # (torch names the member list `_0 = [...]`; ember's printer writes it where used)
    for line in ("c: __torch__.SRC.Color=__torch__.SRC.Color.RED) -> Tensor:",
                 "c0 = self.c", "if torch.eq(c, c0):", "r0 = torch.add(r, (k).value)"):
        assert line in _norm(ours.code, "ember") and line in _norm(theirs.code, "torch")
    ember.jit.save(ours, tmp_path / "e.pt")
    torch.jit.save(theirs, tmp_path / "t.pt")
    with zipfile.ZipFile(tmp_path / "e.pt") as ze, zipfile.ZipFile(tmp_path / "t.pt") as zt:
        ecode = ze.read("e/code/__torch__/enum_src_ember.py").decode()
        tcode = zt.read("t/code/__torch__/enum_src_torch.py").decode()
    enum_src = "class Color(Enum):\n  RED = 1\n  GREEN = 2\n  BLUE = 4\n"
    assert enum_src in ecode and enum_src in tcode
    # each loads the other's archive; a caller's own Color members are accepted
    from_torch = ember.jit.load(tmp_path / "t.pt")
    from_ember = torch.jit.load(tmp_path / "e.pt")
    again = ember.jit.load(tmp_path / "e.pt")
    for c in ("RED", "GREEN"):
        want = theirs(tx, _member(tm, "Color", c)).numpy()
        np.testing.assert_allclose(from_torch(x, _member(em, "Color", c)).numpy(), want)
        np.testing.assert_allclose(again(x, _member(em, "Color", c)).numpy(), want)
        np.testing.assert_allclose(from_ember(tx, _member(tm, "Color", c)).numpy(), want)
    np.testing.assert_allclose(again(x).numpy(), theirs(tx).numpy())
    assert (type(again.c).__name__, again.c.name, again.c.value) == ("Color", "GREEN", 2)


def test_list_of_enum_attribute_archive(em, tm, tmp_path):
    import torch
    ours = ember.jit.script(em.WithList())
    ember.jit.save(ours, tmp_path / "l.pt")
    torch.jit.save(torch.jit.script(tm.WithList()), tmp_path / "tl.pt")
    want = torch.jit.script(tm.WithList())(torch.ones(2)).numpy()
    np.testing.assert_allclose(ours(ember.ones(2)).numpy(), want)
    np.testing.assert_allclose(torch.jit.load(tmp_path / "l.pt")(torch.ones(2)).numpy(), want)
    np.testing.assert_allclose(ember.jit.load(tmp_path / "l.pt")(ember.ones(2)).numpy(), want)
    np.testing.assert_allclose(ember.jit.load(tmp_path / "tl.pt")(ember.ones(2)).numpy(), want)


# --------------------------------------------------------------------------- vision.io

@pytest.fixture(scope="module")
def images(tmp_path_factory):
    Image = pytest.importorskip("PIL.Image")
    d = tmp_path_factory.mktemp("img")
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, size=(12, 10, 3), dtype=np.uint8)
    Image.fromarray(arr).save(d / "a.png")
    Image.fromarray(arr).save(d / "a.jpeg", quality=90)
    return d, arr


def test_announcement_snippet(images):
    """PyTorch 1.7's torchvision 0.8 example, end to end."""
    d, arr = images
    from ember.vision.io import decode_image, read_file, read_image
    tensor_image = read_image(str(d / "a.jpeg"))
    raw_data = read_file(str(d / "a.jpeg"))
    assert raw_data.dtype == ember.uint8 and raw_data.dim() == 1
    assert ember.equal(decode_image(raw_data), tensor_image)
    scripted_read_image = ember.jit.script(read_image)
    assert ember.equal(scripted_read_image(str(d / "a.jpeg")), tensor_image)
    png = scripted_read_image(str(d / "a.png"))
    np.testing.assert_array_equal(png.numpy(), arr.transpose(2, 0, 1))
    assert "mode : Enum<__torch__.torch.vision.io.image.ImageReadMode>" in \
        str(scripted_read_image.graph)


def test_io_functions_scripted_equal_eager(images, tmp_path):
    d, arr = images
    M = eio.ImageReadMode
    s = ember.jit.script
    data = eio.read_file(str(d / "a.png"))
    jdata = eio.read_file(str(d / "a.jpeg"))
    assert ember.equal(s(eio.read_file)(str(d / "a.png")), data)
    for mode in (M.UNCHANGED, M.GRAY, M.GRAY_ALPHA, M.RGB, M.RGB_ALPHA):
        want = eio.decode_image(data, mode)
        assert ember.equal(s(eio.decode_image)(data, mode), want)
        assert ember.equal(s(eio.decode_png)(data, mode), want)
        assert ember.equal(s(eio.read_image)(str(d / "a.png"), mode), want)
        assert ember.equal(s(eio.decode_jpeg)(jdata, mode if mode in (M.GRAY, M.RGB)
                                              else M.UNCHANGED),
                           eio.decode_jpeg(jdata, mode if mode in (M.GRAY, M.RGB)
                                           else M.UNCHANGED))
    img = eio.decode_image(data)
    assert ember.equal(s(eio.encode_png)(img, 3), eio.encode_png(img, 3))
    assert ember.equal(s(eio.encode_jpeg)(img, 60), eio.encode_jpeg(img, 60))
    s(eio.write_png)(img, str(tmp_path / "s.png"), 6)
    eio.write_png(img, str(tmp_path / "e.png"), 6)
    s(eio.write_jpeg)(img, str(tmp_path / "s.jpg"), 70)
    eio.write_jpeg(img, str(tmp_path / "e.jpg"), 70)
    s(eio.write_file)(str(tmp_path / "s.bin"), data)
    for a, b in (("s.png", "e.png"), ("s.jpg", "e.jpg")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes()
    assert (tmp_path / "s.bin").read_bytes() == (d / "a.png").read_bytes()
    with pytest.raises(RuntimeError, match="Expected a value of type"):
        s(eio.decode_image)(data, "RGB")         # scripted: an ImageReadMode, as in torch


def _gray_pipeline(path: str, out: str) -> ember.Tensor:
    img = eio.read_image(path, eio.ImageReadMode.GRAY)
    eio.write_png(img.flip(-1), out)
    return eio.read_image(out, mode=eio.ImageReadMode.UNCHANGED)


def test_scripted_caller_passes_enum(images, tmp_path):
    d, arr = images
    got = ember.jit.script(_gray_pipeline)(str(d / "a.png"), str(tmp_path / "g.png"))
    want = _gray_pipeline(str(d / "a.png"), str(tmp_path / "h.png"))
    assert tuple(got.shape) == (1, 12, 10) and ember.equal(got, want)
