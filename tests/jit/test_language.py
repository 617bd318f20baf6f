"""The TorchScript language, construct by construct: each function or module of
``_lang_src.py`` is scripted by ember and compared with eager ember and with real torch's
``torch.jit.script`` of the same source text (when torch is installed)."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import ember

_SRC = pathlib.Path(__file__).with_name("_lang_src.py").read_text()


def _load(tmp_dir, flavour):
    lines = []
    for line in _SRC.split("\n"):
        if flavour == "ember" and line.endswith("# HEADER"):
            line = (line.replace("import torch  ", "import ember as torch  ")
                    .replace("import torch.", "import ember.").replace("from torch ", "from ember "))
        lines.append(line)
    path = tmp_dir / f"lang_{flavour}.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location(f"lang_{flavour}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # torch finds a class's source through it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def em(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("lang"), "ember")


@pytest.fixture(scope="module")
def tm(tmp_path_factory):
    torch = pytest.importorskip("torch")
    mod = _load(tmp_path_factory.mktemp("lang"), "torch")
    mod._torch = torch
    return mod


def _to_torch(v):
    import torch
    if isinstance(v, ember.Tensor):
        return torch.from_numpy(v.detach().numpy().copy()).requires_grad_(v.requires_grad)
    if isinstance(v, list):
        return [_to_torch(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_to_torch(x) for x in v)
    if isinstance(v, dict):
        return {k: _to_torch(x) for k, x in v.items()}
    return v


def _same(a, b):
    """Values equal up to float tolerance; ember and torch tensors compare by value."""
    if hasattr(a, "detach") and hasattr(b, "detach"):
        x, y = np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy())
        return x.shape == y.shape and x.dtype == y.dtype and np.allclose(x, y, atol=1e-5)
    if hasattr(a, "_fields"):            # NamedTuples of the two flavours' classes
        return a._fields == getattr(b, "_fields", None) and all(map(_same, a, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return isinstance(b, float) and (a == b or abs(a - b) < 1e-6 * max(1, abs(a)))
    return type(a) is type(b) and a == b


def _x(*shape):
    return lambda: ember.randn(*shape, generator=None)


# name -> list of argument makers (each returns the ember arguments)
FUNCTIONS = {
    "unannotated_is_tensor": [lambda: (ember.randn(3), ember.randn(3))],
    "scalars": [lambda: (3, 1.5, True, "ab"), lambda: (1, -2.0, False, "")],
    "none_value": [lambda: (ember.randn(2),)],
    "optional_is_not_none": [lambda: (ember.randn(2), ember.randn(2)),
                             lambda: (ember.randn(2), None)],
    "optional_is_none": [lambda: (ember.randn(2),), lambda: (ember.randn(2), 5)],
    "optional_assert": [lambda: (ember.randn(2), 4)],
    "optional_and": [lambda: (ember.randn(1), 2, 3), lambda: (ember.randn(1), None, 3)],
    "containers": [lambda: (ember.randn(3),)],
    "make_point": [lambda: (1.5,)],
    "use_class": [lambda: (5,)],
    "any_type": [lambda: ("anything", 3), lambda: (ember.randn(1), -2)],
    "annotate_empty": [lambda: (4,), lambda: (0,)],
    "jit_isinstance": [lambda: ([1, 2],), lambda: ({"a": 1},), lambda: ("s",)],
    "local_inference": [lambda: (ember.randn(2),)],
    "refine_branches": [lambda: (ember.randn(2), True), lambda: (ember.randn(2), False)],
    "if_elif": [lambda n=n: (ember.randn(2), n) for n in range(4)],
    "for_range": [lambda: (7,), lambda: (0,)],
    "for_list_tuple": [lambda: ([1.5, 2.0, -1.0],)],
    "for_dict_items": [lambda: ({"ab": 2, "c": 5},)],
    "for_zip_enumerate": [lambda: ([1, 2, 3], [4, 5])],
    "while_loop": [lambda: (6,)],
    "break_continue": [lambda: (20,), lambda: (4,)],
    "early_return": [lambda n=n: (ember.randn(2), n) for n in (-1, 3, 7)],
    "return_in_loop": [lambda: ([3, 1, 4, 1], 4), lambda: ([3, 1], 9), lambda: ([], 1)],
    "return_in_while": [lambda: (ember.ones(2), 20.0)],
    "return_in_nested_loops": [lambda: (5,), lambda: (2,)],
    "comprehensions": [lambda: (ember.randn(2), 5)],
    "aug_assign": [lambda: (ember.randn(3), 9)],
    "raise_error": [lambda: (ember.randn(2), 2)],
    "assert_msg": [lambda: (ember.randn(2), 1)],
    "fstrings": [lambda: (7, 3.14159, "s")],
    "math_fns": [lambda: (2.5, 4)],
    "calls_script_fn": [lambda: (ember.randn(3),)],
    "torch_functions": [lambda: (ember.randn(3, 4),)],
    "functional": [lambda: (ember.randn(3, 4),)],
    "tensor_methods": [lambda: (ember.randn(3, 4),)],
    "no_grad_block": [lambda: (ember.randn(2, requires_grad=True),)],
    "calls_ignored": [lambda: (ember.randn(2),)],
    "generators_and_with": [lambda: (ember.randn(2), 4)],
    "del_statement": [lambda: (ember.randn(2),)],
    "use_vec": [lambda: (1.5,)],
    "dict_ops": [lambda: ({"a": 1, "b": 2, "c": 3},)],
    "list_ops": [lambda: ([3, 1, 2],)],
    "str_ops": [lambda: ("xa, b ,c",)],
    "tuple_ret": [lambda: (ember.ones(2),)],
    "optional_ret": [lambda: (ember.ones(1), False), lambda: (ember.ones(1), True)],
    "chained": [lambda: (ember.ones(1), 3), lambda: (ember.ones(1), 5)],
    "nested_fn_defaults": [lambda: (ember.ones(2),), lambda: (ember.ones(2), 2, "xy", 0.5,
                                                               ember.ones(2))],
    "tensor_index_ops": [lambda: (ember.arange(12.).reshape(3, 4) - 5,)],
    "int_float_ops": [lambda: (7, 2.5), lambda: (-7, -1.0)],
    "while_cond": [lambda: (ember.ones(2),)],
    "device_dtype": [lambda: (ember.ones(2),)],
    "optional_list": [lambda: ([1, 2],), lambda: ()],
    "namedtuple_out": [lambda: (ember.ones(1),)],
    "isinstance_any": [lambda: ("q",), lambda: (3,), lambda: (ember.ones(1),), lambda: (2.5,)],
    "optional_tensor_isinstance": [lambda: (None,), lambda: (ember.ones(2),)],
    "tuple_of_lists": [lambda: (ember.ones(2),)],
    "min_max_sum": [lambda: ([1.5, -2.0, 3.0],)],
    "ternary_chain": [lambda a=a: (a,) for a in (-3, 0, 3)],
    "bool_ops": [lambda: (True, False), lambda: (True, True)],
    "float_special": [lambda: (-2.5,), lambda: (1e10,)],
    "list_of_tuples": [lambda: (3,)],
    "string_format_methods": [lambda: (4, "ab")],
    "while_break_else": [lambda: (4,)],
    "tensor_list_ops": [lambda: (ember.arange(6.),)],
    "grad_mode": [lambda: (ember.ones(2, requires_grad=True),)],
    "union_narrowing": [lambda: (3,), lambda: ("a",), lambda: ([1, 2],)],
    "union_with_none": [lambda: (None,), lambda: (5,), lambda: ("abc",)],
}
CASES = [(name, k) for name, makers in FUNCTIONS.items() for k in range(len(makers))]
# scripted code writes floats as TorchScript does (17 significant digits), unlike Python
EAGER_DIFFERS = {"fstrings": "s:7:3.1415899999999999:14" + "7-sx3.1415899999999999y"}
# x.size() is an int[] in scripted code, a Size (a tuple) in eager code
SIZE_AS_LIST = {"device_dtype"}


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_function_matches_eager(em, name, k):
    fn = getattr(em, name)
    ember.manual_seed(k)
    args = FUNCTIONS[name][k]()
    expected = EAGER_DIFFERS.get(name) or fn(*args)
    ember.manual_seed(k)
    args = FUNCTIONS[name][k]()           # fresh: a call may mutate its arguments
    got = ember.jit.script(fn)(*args)
    if name in SIZE_AS_LIST:
        expected = tuple(list(v) if isinstance(v, ember.Size) else v for v in expected)
    assert _same(expected, got), (expected, got)


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_function_matches_torch_script(em, tm, name, k):
    ember.manual_seed(k)
    args = FUNCTIONS[name][k]()
    want = tm._torch.jit.script(getattr(tm, name))(*_to_torch(args))
    got = ember.jit.script(getattr(em, name))(*args)
    assert _same(got, want), (got, want)


def test_is_scripting_differs_from_eager(em):
    x = ember.ones(2)
    assert _same(em.uses_is_scripting(x), x - 1)
    assert _same(ember.jit.script(em.uses_is_scripting)(x), x + 1)


@pytest.mark.parametrize("n", [4, 5])
def test_raise_and_assert_at_run_time(em, tm, n):
    s = ember.jit.script(em.raise_error)
    t = tm._torch.jit.script(tm.raise_error)
    import torch
    with pytest.raises(torch.jit.Error) as want:
        t(torch.ones(1), n)
    with pytest.raises(ember.jit.Error) as got:
        s(ember.ones(1), n)
    assert str(want.value).strip().split("\n")[-1] == str(got.value).strip().split("\n")[-1]
    a = ember.jit.script(em.assert_msg)
    with pytest.raises(ember.jit.Error, match="n must be non-negative"):
        a(ember.ones(1), -1)


def test_script_on_class(em, tm):
    """``jit.script`` on a class returns it, compiled: its attributes are typed from
    ``__init__`` and its methods run from scripted code (as in torch)."""
    from ember.jit import _types as T
    assert ember.jit.script(em.Acc) is em.Acc
    assert tm._torch.jit.script(tm.Acc) is tm.Acc
    ct = ember.jit._script.script_class(em.Acc)
    assert ct.attributes == {"total": T.IntType, "items": T.ListType(T.IntType)}
    assert ember.jit.script(em.use_class)(4) == tm._torch.jit.script(tm.use_class)(4) == 1604


MODULES = {
    "ModConstants": lambda: (ember.randn(2, 4),),
    "ModFinal": lambda: (ember.randn(2, 4),),
    "ModContainers": lambda: (ember.randn(3, 4),),
    "ModMethods": lambda: (ember.randn(3, 4),),
    "ModUnrolledExits": lambda: (ember.randn(2, 3), 2, 1),
    "ModProperty": lambda: (ember.randn(3, 4),),
}


def _pair(em, tm, name):
    ember.manual_seed(0)
    m = getattr(em, name)().eval()
    t = getattr(tm, name)().eval() if tm is not None else None
    if t is not None:
        t.load_state_dict({k: _to_torch(v) for k, v in m.state_dict().items()})
    return m, t


@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_eager(em, name):
    m, _ = _pair(em, None, name)
    args = MODULES[name]()
    assert _same(m(*args), ember.jit.script(m)(*args))


@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_torch_script(em, tm, name):
    m, t = _pair(em, tm, name)
    args = MODULES[name]()
    assert _same(ember.jit.script(m)(*args), tm._torch.jit.script(t)(*_to_torch(args)))


def test_export_unused_ignore(em, tm):
    m, t = _pair(em, tm, "ModMethods")
    s, ts = ember.jit.script(m), tm._torch.jit.script(t)
    x = ember.randn(2, 4)
    assert _same(s.exported(x), ts.exported(_to_torch(x)))
    assert _same(s.exported(x), m.exported(x))
    import torch
    with pytest.raises(torch.jit.Error):
        ts(_to_torch(x), True)
    with pytest.raises(ember.jit.Error):
        s(x, True)


def test_jit_attribute_types(em, tm):
    m, t = _pair(em, tm, "ModAttribute")
    s, ts = ember.jit.script(m), tm._torch.jit.script(t)
    x = ember.randn(2)
    for name in ("a", "b", "a"):
        assert _same(s(x, name), ts(_to_torch(x), name))
    assert s.names == ts.names == ["a", "b", "a"]
    assert s.table == ts.table


def test_tensor_converts_implicitly_to_int(em, tm):
    # an int argument or return annotation takes a 0-dim integer tensor (aten::IntImplicit)
    x = ember.tensor([1, 2, 3])
    s, t = ember.jit.script(em.tensor_as_int), tm._torch.jit.script(tm.tensor_as_int)
    assert s(x) == t(_to_torch(x)) == 18
    assert "aten::IntImplicit" in str(s.graph)


@pytest.mark.parametrize("stop,skip", [(0, 5), (2, 1), (3, 3), (9, 0)])
def test_exits_in_unrolled_loops(em, tm, stop, skip):
    m, t = _pair(em, tm, "ModUnrolledExits")
    x = ember.randn(2, 3)
    s, ts = ember.jit.script(m), tm._torch.jit.script(t)
    assert _same(s(x, stop, skip), m(x, stop, skip))
    assert _same(s(x, stop, skip), ts(_to_torch(x), stop, skip))


def test_module_state_and_containers_in_training(em, tm):
    """A module mutating a buffer, an Optional attribute and a counter, indexing and
    iterating ModuleList/ModuleDict, calling a submodule's exported method: the same
    results and state as torch's scripted module, call after call."""
    ember.manual_seed(0)
    m = em.ModFeatures()
    t = tm.ModFeatures()
    t.load_state_dict({k: _to_torch(v) for k, v in m.state_dict().items()})
    s, ts = ember.jit.script(m), tm._torch.jit.script(t)
    x = ember.randn(2, 3)
    for which in ("a", "b", "a"):
        assert _same(s(x, which), ts(_to_torch(x), which))
    assert _same(s.running, ts.running) and _same(s.cache, ts.cache)
    assert s.counter == ts.counter == 6
    assert _same(s.sub.half(x), ts.sub.half(_to_torch(x)))


def test_union_argument_checked_at_call(em, tm):
    s, t = ember.jit.script(em.union_narrowing), tm._torch.jit.script(tm.union_narrowing)
    with pytest.raises(RuntimeError) as got:
        s(2.5)
    with pytest.raises(RuntimeError) as want:
        t(2.5)
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]
    assert str(s.graph).split("\n")[0] == "graph(%x : Union(int[], int, str)):"
