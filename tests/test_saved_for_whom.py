"""Note [saved for whom]: a saved argument only the gradient of a non-differentiable operand
would read is not version-checked (nor packed by saved-tensor hooks), as torch saves it not."""
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(lib, program):
    lib.manual_seed(0)
    x = lib.randn(3, requires_grad=True)
    try:
        program(lib, x)
    except RuntimeError as e:
        return "RuntimeError", "modified by an inplace operation" in str(e)
    return [round(v, 5) for v in x.grad.tolist()]


PROGRAMS = {
    "mul by a number, then the input changed": lambda L, x: _mul_then_add(L, x, 2.0),
    "div by a number, then the input changed": lambda L, x: _div_then_mul(L, x),
    "mul by a tensor without grad": lambda L, x: _mul_then_add(L, x, L.ones(3) * 3),
    "mul by a tensor with grad (still an error)":
        lambda L, x: _mul_then_add(L, x, L.ones(3, requires_grad=True)),
    "in-place mul by a number": lambda L, x: _inplace_mul(L, x),
    "x * x in place (still an error)": lambda L, x: _square_inplace(L, x),
}


def _mul_then_add(L, x, other):
    y = x * 1
    z = y * other
    y.add_(1)
    z.sum().backward()


def _div_then_mul(L, x):
    y = x * 1
    z = y / 3
    y.mul_(5)
    z.sum().backward()


def _inplace_mul(L, x):
    y = x * 1
    y.mul_(3)
    y.sum().backward()


def _square_inplace(L, x):
    y = x.clone()
    y.mul_(y)
    y.sum().backward()


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_version_checks_as_torch(name):
    assert _run(ember, PROGRAMS[name]) == _run(torch, PROGRAMS[name])


def test_hooks_pack_what_torch_packs():
    for lib in (ember, torch):
        packed = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            x * 2
            x * x
            x / 4
        assert len(packed) == 2, lib.__name__
