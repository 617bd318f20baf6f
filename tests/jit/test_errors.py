"""Compile-time errors of ``jit.script``, one test per refused construct: ember raises the
class torch raises (``frontend.NotSupportedError``/``UnsupportedNodeError`` for Python it
does not support, ``RuntimeError`` for type and name errors) with torch's message, and
points at the same source line and column with the ``~~~ <--- HERE`` underline."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import sys

import pytest

import ember

_SRC = pathlib.Path(__file__).with_name("_err_src.py").read_text()


def _load(tmp_dir, flavour):
    text = _SRC
    if flavour == "ember":
        text = text.replace("import torch  # HEADER", "import ember as torch  # HEADER")
    path = tmp_dir / f"errs_{flavour}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"errs_{flavour}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def em(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("errs"), "ember")


@pytest.fixture(scope="module")
def tm(tmp_path_factory):
    pytest.importorskip("torch")
    return _load(tmp_path_factory.mktemp("errs"), "torch")


# function -> (ember class, the start of torch's message)
CASES = {
    "try_block": ("UnsupportedNodeError", "try blocks aren't supported"),
    "lambda_expr": ("UnsupportedNodeError", "Lambda aren't supported"),
    "global_stmt": ("UnsupportedNodeError", "global variables aren't supported"),
    "set_literal": ("UnsupportedNodeError", "Set aren't supported"),
    "set_comprehension": ("UnsupportedNodeError", "SetComp aren't supported"),
    "star_args": ("NotSupportedError", "Compiled functions can't take variable number of "
                                       "arguments or use keyword-only arguments with defaults"),
    "kwargs_def": ("NotSupportedError", "Compiled functions can't take variable number of "
                                        "arguments or use keyword-only arguments with defaults"),
    "yield_stmt": ("UnsupportedNodeError", "Yield aren't supported"),
    "nested_def": ("UnsupportedNodeError", "function definitions aren't supported"),
    "class_in_function": ("UnsupportedNodeError", "class definitions aren't supported"),
    "import_stmt": ("UnsupportedNodeError", "import statements aren't supported"),
    "for_else": ("NotSupportedError", "else branches of for loops aren't supported"),
    "nonlocal_stmt": ("UnsupportedNodeError", "function definitions aren't supported"),
    "starred_assign": ("RuntimeError", "cannot statically infer the expected size of a list"),
    "dict_unpack": ("NotSupportedError", "Dict expansion (e.g. `{**dict}`) is not supported"),
    "call_kwargs_expansion": ("NotSupportedError", "keyword-arg expansion is not supported"),
    "match_stmt": ("UnsupportedNodeError", "Match aren't supported"),
    "call_type_mismatch": ("RuntimeError", "takes_int(int x) -> int:\nExpected a value of type "
                                           "'int' for argument 'x' but instead found type 'str'."),
    "branch_type_mismatch": ("RuntimeError", "Type mismatch: y is set to type int in the true "
                                             "branch and type str in the false branch"),
    "wrong_return_type": ("RuntimeError", "Return value was annotated as having type List[int] "
                                          "but is actually of type Tensor (inferred)"),
    "undefined_name": ("RuntimeError", "undefined value not_defined_anywhere"),
    "defined_one_branch": ("RuntimeError", "y is not defined in the false branch"),
    "return_type_branches": ("RuntimeError", "Previous return statement returned a value of "
                                             "type int but this return statement returns a "
                                             "value of type str"),
    "annotated_assign_mismatch": ("RuntimeError", "Variable 'y' is annotated with type int but "
                                                  "is being assigned to a value of type str"),
    "loop_type_change": ("RuntimeError", "Variable 'y' previously had type int but is now "
                                         "being assigned to a value of type str"),
    "bad_method": ("RuntimeError", "'Tensor (inferred)' object has no attribute or method "
                                   "'not_a_method'."),
    "tuple_index_range": ("RuntimeError", "Tuple index out of range. Tuple is length 2 and "
                                          "index is 5"),
    "str_times_int": ("RuntimeError", "Arguments for call are not valid."),
    "NoAttr": ("RuntimeError", "Module 'NoAttr' has no attribute 'missing'"),
    "BadType": ("RuntimeError", "Module 'BadType' has no attribute 'obj' (This attribute "
                                "exists on the Python module, but we failed to convert Python "
                                "type: 'object' to a TorchScript type."),
    "SetNew": ("RuntimeError", "Tried to set nonexistent attribute: fresh. Did you forget to "
                               "initialize it in __init__()?"),
    "SetConst": ("RuntimeError", "Tried to set nonexistent attribute: k."),
    # (torch mangles the class name once Linear was scripted with other attribute types)
    "WrongArgs": ("RuntimeError", "forward(__torch__.torch.nn.modules.linear."),
    "AttrTypeChange": ("RuntimeError", "Wrong type for attribute assignment. Expected int but "
                                       "got float"),
    "recursive": ("RuntimeError", "function 'recursive' is called recursively. Recursive calls "
                                  "are not supported"),
    "missing_arg": ("RuntimeError", "helper2(Tensor x, Tensor y) -> Tensor:\nArgument y not "
                                    "provided."),
    "unknown_kwarg": ("RuntimeError", "helper2(Tensor x, Tensor y) -> Tensor:\nKeyword "
                                      "argument z unknown."),
    "nested_containers": ("RuntimeError", "Arguments for call are not valid.\nThe following "
                                          "variants are available:"),
    "tensor_bad_kwarg": ("RuntimeError", "Arguments for call are not valid.\nThe following "
                                         "variants are available:"),
    "torch_fn_bad": ("RuntimeError", "Arguments for call are not valid.\nThe following "
                                     "variants are available:"),
    "none_method": ("RuntimeError", "'NoneType' object has no attribute or method 'foo'."),
    "list_append_type": ("RuntimeError", "aten::append.t(t[](a!) self, t(c -> *) el) -> "
                                         "t[](a!):\nCould not match type Tensor (inferred) to "
                                         "t in argument 'el'"),
}


def _classes(cls_name, module):
    if cls_name == "RuntimeError":
        return RuntimeError
    return getattr(module.jit.frontend, cls_name)


def _caret(text):
    """(the source line above the first ``<--- HERE`` underline, the underline's column)."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if "<--- HERE" in line:
            return lines[k - 1].strip(), len(line) - len(line.lstrip())
    return None


@pytest.mark.parametrize("name", list(CASES))
def test_error_matches_torch(em, tm, name):
    import torch
    cls_name, start = CASES[name]
    t, m = getattr(tm, name), getattr(em, name)
    if isinstance(t, type):           # a module class: script an instance
        t, m = t(), m()
    with pytest.raises(_classes(cls_name, torch)) as want:
        torch.jit.script(t)
    with pytest.raises(_classes(cls_name, ember)) as got:
        ember.jit.script(m)
    if cls_name != "RuntimeError":
        assert type(got.value).__name__ == type(want.value).__name__ == cls_name
    w, g = str(want.value).lstrip(), str(got.value).lstrip()
    assert w.startswith(start) and g.startswith(start), g
    assert _caret(g) == _caret(w)
    assert ("and was used here:" in g) == ("and was used here:" in w)
    if name == "WrongArgs":
        tail = "Expected at most 2 arguments but found 3 positional arguments."
        assert tail in g and tail in w
    if name in ("tensor_bad_kwarg", "torch_fn_bad"):     # the reason torch gives too
        reason = g.split("\n")[4].strip()
        assert reason in w and "The original call is:" in g


def test_while_else_is_refused(em):
    # torch 2.13 itself crashes on this (a TypeError building its error report)
    with pytest.raises(ember.jit.frontend.NotSupportedError,
                       match="else branches of while loops aren't supported"):
        ember.jit.script(em.while_else)


def test_list_of_mixed_types_is_refused(em):
    # torch types it List[Union[int, str]] with a warning; ember has no Union type
    with pytest.raises(RuntimeError, match="Lists must contain only a single type"):
        ember.jit.script(em.list_mixed_types)


def test_argument_type_checked_at_call(em, tm):
    import torch
    s, t = ember.jit.script(em.takes_int), torch.jit.script(tm.takes_int)
    for bad in ("a", 2.5):
        with pytest.raises(RuntimeError) as want:
            t(bad)
        with pytest.raises(RuntimeError) as got:
            s(bad)
        head = str(want.value).split("\n")[:4]
        assert str(got.value).split("\n")[:4] == head
    assert s(3) == t(3) == 4


def test_errors_are_frontend_classes():
    assert issubclass(ember.jit.frontend.UnsupportedNodeError, ember.jit.frontend.NotSupportedError)
    assert issubclass(ember.jit.frontend.NotSupportedError, RuntimeError)


@pytest.mark.parametrize("name,args", [
    ("rt_outer", lambda m: (m.ones(2, 3), m.ones(4, 5))),
    ("rt_index", lambda m: (m.ones(3), 7)),
])
def test_run_time_error_names_the_scripted_lines(em, tm, name, args):
    """An op failing inside scripted code: torch's class, and its "Traceback of TorchScript"
    naming each scripted frame's line with the callee underlined."""
    import torch
    with pytest.raises(Exception) as want:
        torch.jit.script(getattr(tm, name))(*args(torch))
    with pytest.raises(Exception) as got:
        ember.jit.script(getattr(em, name))(*args(ember))
    if name == "rt_outer":
        assert type(got.value).__name__ == type(want.value).__name__ == "RuntimeError"
    # (an op's IndexError stays IndexError in ember; torch's interpreter makes it RuntimeError)
    w = re.sub(r'File ".*?errs_torch.py"', 'File "X"', str(want.value))
    g = re.sub(r'File ".*?errs_ember.py"', 'File "X"', str(got.value))
    assert "Traceback of TorchScript" in g
    if name == "rt_outer":      # the op's own message is the same too
        assert g.strip() == w.strip()
    else:
        assert g.split("\n")[:-2] == w.split("\n")[:-2]


def test_break_in_unrolled_loop(em, tm):
    import torch
    with pytest.raises(RuntimeError) as want:
        torch.jit.script(tm.UnrolledBreak())
    with pytest.raises(RuntimeError) as got:
        ember.jit.script(em.UnrolledBreak())
    head = "Because we emit iteration over modulelists or tuples as unrolled loops"
    assert str(got.value).lstrip().startswith(head) and str(want.value).lstrip().startswith(head)
    assert _caret(str(got.value)) == _caret(str(want.value))
