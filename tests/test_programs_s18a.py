"""Regressions of round 13a (session 18): the differences rounds 12a/12b left (subclass
construction texts and protocol order, ``Tensor.backward``'s arguments to handlers, saved
tensors: ``_raw_saved_*``, pack hooks modifying their input, ``_saved_dim`` values; unknown
keywords of ``view``/``to``/``cat``) and what sequence and text programs hit next, each
checked against torch."""
import numpy as np
import pytest

import ember
from helpers import assert_same_outcome

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- subclass construction

def _tagged(L, log):
    class T(L.Tensor):
        @staticmethod
        def __new__(cls, data, tag):
            t = L.Tensor._make_subclass(cls, data, True)
            t.tag = tag
            return t

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", str(func))
            for a in args:
                if isinstance(a, T) and not hasattr(a, "tag"):
                    log.append(("untagged", name))
            if name == "backward":
                log.append((name, len(args), kwargs))
            return super().__torch_function__(func, types, args, kwargs)
    return T


def test_make_subclass_asks_no_handler_and_backward_hands_its_arguments():
    logs = {}
    for L in (torch, ember):
        log = logs[L] = []
        T = _tagged(L, log)
        x = T(L.ones(3), "hi")
        assert x.requires_grad and x.is_leaf and x.tag == "hi"
        (x * 2).sum().backward()
        (x * 3).sum().backward(L.tensor(2.0), retain_graph=True)
        log.append(_np(x.grad).tolist())
    norm = [[(e[0], e[1], {k: (v.item() if hasattr(v, "item") else v)
                           for k, v in e[2].items()}) if e[0] == "backward" else e
             for e in logs[L]] for L in (torch, ember)]
    assert norm[0] == norm[1]
    assert ("backward", 1, {"gradient": 2.0, "retain_graph": True, "create_graph": False,
                            "inputs": None}) in norm[1]
    assert not any(e[0] == "untagged" and e[1] in ("is_floating_point", "__set__")
                   for e in norm[1])


def test_a_mode_sees_backward_arguments_and_no_keywords_as_none():
    seen = {}
    for L in (torch, ember):
        got = seen[L] = []

        class M(L.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = getattr(func, "__name__", "")
                if name in ("backward", "exp", "mul", "sum"):
                    got.append((name, None if kwargs is None else sorted(kwargs)))
                return func(*args, **(kwargs or {}))
        x = L.ones(2, requires_grad=True)
        with M():
            y = (x.exp() * 2).sum()
            y.backward(None, True, False, [x])
    assert seen[torch] == seen[ember]
    assert ("backward", ["create_graph", "gradient", "inputs", "retain_graph"]) in seen[ember]


@pytest.mark.parametrize("call", [
    lambda L: L.Tensor._make_subclass(type("P", (L.Tensor,), {}), L.arange(3), True),
    lambda L: L.Tensor._make_subclass(int, L.randn(3)),
    lambda L: L.Tensor._make_subclass("x", L.randn(3)),
    lambda L: L.randn(3).as_subclass(int),
    lambda L: L.randn(3).as_subclass(object),
    lambda L: L.randn(3).as_subclass(None),
    lambda L: L.arange(3).requires_grad_(),
])
def test_subclass_construction_texts(call):
    assert_same_outcome(call)


def test_make_subclass_of_an_inference_tensor_and_of_other_dtypes():
    for L in (torch, ember):
        P = type("P", (L.Tensor,), {})
        with L.inference_mode():
            it = L.ones(2)
        assert_same_outcome(lambda M: M.Tensor._make_subclass(
            type("P", (M.Tensor,), {}), _inference_ones(M), True))
        q = L.Tensor._make_subclass(P, L.zeros(2, dtype=L.complex64), True)
        assert q.requires_grad and type(q) is P
        b = L.Tensor._make_subclass(P, L.zeros(2, dtype=L.bfloat16), True)
        assert b.requires_grad and b.dtype == L.bfloat16
        assert not L.Tensor._make_subclass(P, it).requires_grad


def _inference_ones(L):
    with L.inference_mode():
        return L.ones(2)


# ---------------------------------------------------------------- saved tensors

def test_pack_hook_modifying_its_input():
    def pack(t):
        t.add_(1)
        return t
    for op in (lambda b: b.exp(), lambda b: b * b):
        assert_same_outcome(lambda L: _packed_in_place(L, pack, op))


def _packed_in_place(L, pack, op):
    b = L.ones(3, requires_grad=True) * 1
    with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        return op(b)


def test_raw_saved_tensor_hooks():
    out = {}
    for L in (torch, ember):
        log = out[L] = []
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = x * x.detach()
        names = sorted(n for n in dir(w.grad_fn) if n.startswith(("_raw", "_saved")))
        log.append(names)
        r = w.grad_fn._raw_saved_other
        log.append((type(r).__name__, r is w.grad_fn._raw_saved_other))
        r.register_hooks(lambda t: ("packed", t * 2),
                         lambda p: (log.append("unpack " + p[0]), p[1])[1])
        for again in (lambda: r.register_hooks(lambda t: t, lambda t: t),
                      lambda: r.register_hooks(lambda t: t)):
            try:
                again()
            except (RuntimeError, TypeError) as e:
                log.append((type(e).__name__, str(e).split("\n")[0]))
        w.sum().backward()
        log.append(_np(x.grad).tolist())
        try:
            r.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as e:
            log.append(str(e))
        e = x.exp()
        e.grad_fn._raw_saved_result.register_hooks(lambda t: t + 1, lambda t: t)
        e.sum().backward()
        log.append(_np(x.grad).tolist())
        y = x.detach() * 2
        try:          # saved only for a gradient nobody needs: torch's None
            (y * x).grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as err:
            log.append(str(err))
        s = x.sin()
        s.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 3)
        try:
            s.sum().backward()
        except TypeError as err:
            log.append(str(err))
        log.append(sorted(n for n in dir(L.cat([x, x]).grad_fn) if n.startswith("_raw")))
    assert out[torch] == out[ember]


def test_raw_saved_hooks_skip_the_version_check():
    for L in (torch, ember):
        x = L.ones(3, requires_grad=True)
        b = x * 1
        w = b.sin()
        w.grad_fn._raw_saved_self.register_hooks(lambda t: t.clone(), lambda t: t)
        with L.no_grad():
            b.add_(1)
        w.sum().backward()
        assert np.allclose(_np(x.grad), np.cos(1.0))


@pytest.mark.parametrize("make", [
    lambda x: x.sum(1), lambda x: x.sum(-1), lambda x: x.sum([-1, 0]), lambda x: x.sum(dim=[1]),
    lambda x: x.mean(-2), lambda x: x.mean((0, 1)), lambda x: x.amax(-1), lambda x: x.amin((0,)),
    lambda x: x.std(-1), lambda x: x.var(1), lambda x: x.norm(dim=-1), lambda x: x.logsumexp(-1),
    lambda x: x.nansum(-1), lambda x: x.permute(-1, 0), lambda x: x.flip(-1),
    lambda x: x.softmax(-1), lambda x: x.unsqueeze(-1), lambda x: x.cumsum(-1),
    lambda x: x.transpose(-1, -2), lambda x: x.log_softmax(-1), lambda x: x.max(-1)[0],
    lambda x: x.roll(-1, -1), lambda x: x.tril(-1), lambda x: x.gather(
        -1, x.new_zeros(3, 1).long()), lambda x: x[None].squeeze(0), lambda x: x.pow(-1),
])
def test_saved_ints_as_torch_reads_them(make):
    got = {}
    for L in (torch, ember):
        x = L.ones(3, 4, requires_grad=True)
        fn = make(x).grad_fn
        got[L] = {n: getattr(fn, n) for n in ("_saved_dim", "_saved_dims", "_saved_dim0",
                                              "_saved_dim1", "_saved_shifts",
                                              "_saved_diagonal", "_saved_exponent")
                  if hasattr(fn, n)}
    assert got[torch] == got[ember] and got[ember]


# ---------------------------------------------------------------- unknown keywords

@pytest.mark.parametrize("call", [
    lambda L: L.ones(4, 4).view(16, foo=1),
    lambda L: L.ones(4, 4).view(2, 8, foo=1),
    lambda L: L.ones(4, 4).view((2, 8), foo=1),
    lambda L: L.ones(4, 4).view(L.float32, foo=1),
    lambda L: L.ones(4, 4).view(foo=1),
    lambda L: L.ones(4, 4).view(4, 4, dtype=L.float32),
    lambda L: L.ones(4, 4).view(dtype=L.float32, foo=1),
    lambda L: L.ones(4, 4).view(size=(16,), foo=1),
    lambda L: L.ones(4, 4).view((16,), size=(16,)),
    lambda L: L.ones(2).to(L.float64, foo=1),
    lambda L: L.ones(2).to("cpu", foo=1),
    lambda L: L.ones(2).to(foo=1),
    lambda L: L.ones(2).to(L.ones(1), foo=1),
    lambda L: L.ones(2).to("cpu", L.float64, foo=1),
    lambda L: L.ones(2).to(dtype=L.float64, foo=1),
    lambda L: L.ones(2).to(L.float64, non_blocking=False, copy=False, foo=1),
    lambda L: L.ones(2).to(L.float64, foo=1, bar=2),
    lambda L: L.ones(2).to(L.device("cpu"), foo=1),
    lambda L: L.ones(2).to(L.float64, memory_format=L.preserve_format, foo=1),
    lambda L: L.ones(2).to(None, foo=1),
    lambda L: L.ones(2).to(L.strided),
    lambda L: L.ones(2).sum(L.device("cpu")),
    lambda L: L.ones(2).sum(L.Generator()),
    lambda L: L.ones(2).reshape(L.preserve_format),
    lambda L: L.cat([L.ones(2), L.ones(2)], axis=0, foo=1),
    lambda L: L.cat([L.ones(2), L.ones(2)], foo=1, axis=0),
    lambda L: L.cat([L.ones(2), L.ones(2)], foo=1),
    lambda L: L.cat([L.ones(2), L.ones(2)], 0, foo=1),
    lambda L: L.cat(tensors=[L.ones(2), L.ones(2)], foo=1),
    lambda L: L.cat([L.ones(2), L.ones(2)], dim=0, foo=1, bar=2),
    lambda L: L.cat([L.ones(2), L.ones(2)], 0, axis=0),
    lambda L: L.stack([L.ones(2), L.ones(2)], axis=0, foo=1),
    lambda L: L.stack([L.ones(2), L.ones(2)], foo=1),
    lambda L: L.concat([L.ones(2), L.ones(2)], axis=0, foo=1),
    lambda L: L.unbind(L.ones(2, 2), foo=1),
    lambda L: L.ones(3).sort(0, True, stable=1, foo=2),
])
def test_unknown_keyword_texts(call):
    assert_same_outcome(call)


@pytest.mark.parametrize("call", [
    lambda L: L.ones(4, 4).view(size=(16,)).shape,
    lambda L: L.ones(4, 4).view(dtype=L.int32).dtype,
    lambda L: L.ones(4, 4).view(L.int32).dtype,
    lambda L: L.cat([L.ones(2), L.ones(2)], axis=0).shape,
    lambda L: L.cat([L.ones(2), L.ones(2)], dim=0, out=None).shape,
    lambda L: L.stack([L.ones(2), L.ones(2)], axis=1).shape,
    lambda L: L.ones(2).to(L.float64, non_blocking=False, copy=True).dtype,
])
def test_keywords_that_bind(call):
    assert_same_outcome(call, raises=False)
