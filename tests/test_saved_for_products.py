"""Products keep each factor for the other's gradient only (``saved_for`` in
ember/_ops/blas.py): stepping a weight in place between two backwards of one graph is no
error when the input needs no gradient, and is torch's version error when it does."""
import pytest
import torch

import ember


def _outcome(lib, case):
    try:
        case(lib)
        return "ok"
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "version error"


def _one_linear(lib):
    m = lib.nn.Linear(3, 2)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    loss = m(lib.randn(4, 3)).sum()
    loss.backward(retain_graph=True)
    opt.step()
    loss.backward()


def _two_linears(lib):
    m = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Linear(3, 2))
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    loss = m(lib.randn(4, 3)).sum()
    loss.backward(retain_graph=True)
    opt.step()
    loss.backward()


def _product(name, shapes):
    def case(lib):
        args = [lib.randn(*s) for s in shapes]
        w = args[-1].requires_grad_()
        out = getattr(lib, name)(*args)
        with lib.no_grad():
            w.add_(1)
        out.sum().backward()
    return case


def _input_changed(lib):
    w = lib.randn(3, 2)
    x = lib.randn(4, 3, requires_grad=True)
    out = lib.mm(x, w).sum()
    w.add_(1)
    out.backward()


CASES = {
    "one linear": _one_linear, "two linears": _two_linears, "input changed": _input_changed,
    "mm": _product("mm", [(4, 3), (3, 2)]), "matmul": _product("matmul", [(5, 4, 3), (3, 2)]),
    "bmm": _product("bmm", [(2, 4, 3), (2, 3, 2)]), "mv": _product("mv", [(4, 3), (3,)]),
    "dot": _product("dot", [(3,), (3,)]), "addmm": _product("addmm", [(2,), (4, 3), (3, 2)]),
    "baddbmm": _product("baddbmm", [(2, 4, 2), (2, 4, 3), (2, 3, 2)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_version_checks_follow_what_the_gradients_read(name):
    want = _outcome(torch, CASES[name])
    assert _outcome(ember, CASES[name]) == want
