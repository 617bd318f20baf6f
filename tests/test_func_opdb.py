"""ember.func.jvp over the op database.

For every OpInfo with ``supports_grad`` and float64 samples (the first two per op), the
jvp along a random tangent is checked against

* central finite differences of the op along that tangent, and
* reverse mode: ``<u, J t> == <J^T u, t>`` for a random cotangent ``u`` (vjp), and
* forward_ad dual tensors (``make_dual`` / ``unpack_dual``) giving the same tangent.

Ops whose jvp raises the clear "no derivative" error are listed in ``NO_DERIVATIVE``
(and the test checks they still raise), so nothing is skipped silently. Run the module
as a script for the counts: ``python tests/test_func_opdb.py``.
"""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import ember  # noqa: E402
import ember.autograd.forward_ad as fwAD  # noqa: E402
from helpers import to_ember  # noqa: E402
from opdb import OP_DB  # noqa: E402

EPS = 1e-6
N_SAMPLES = 2
MAX_NUMEL = 400                      # keep the samples small (finite differences)

# ops whose forward is random: finite differences are meaningless, only the
# reverse-mode identity is checked (under a fixed seed per call)
RANDOM_OPS = {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
              "dropout2d", "dropout3d", "rrelu", "bernoulli", "multinomial", "normal",
              "poisson", "rand_like", "randn_like", "randint_like"}

# ops that raise "... that does not support it because it has no derivative formula"
NO_DERIVATIVE: set = set()

GRAD_OPS = [op for op in OP_DB if op.supports_grad and "float64" in op.grad_dtypes]


def _samples(op):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}|func-jvp".encode()))
    out = []
    for s in op.sample_inputs("float64", rng):
        if op.grad_input_filter is not None and not op.grad_input_filter(s):
            continue
        arrs = (s.input if isinstance(s.input, list) else [s.input]) + \
            [a for a in s.args if isinstance(a, np.ndarray)]
        if sum(a.size for a in arrs if isinstance(a, np.ndarray)) > MAX_NUMEL:
            continue
        out.append(s)
        if len(out) == N_SAMPLES:
            break
    return out


def _fn(op, sample):
    """(f(*diff_inputs) -> tuple of float outputs, list of differentiable inputs)."""
    x = to_ember(sample.input)
    args = tuple(to_ember(a) for a in sample.args)
    flat = (list(x) if isinstance(x, list) else [x]) + \
        [a for a in args if isinstance(a, ember.Tensor)]
    diff = [t for t in flat if isinstance(t, ember.Tensor) and t.is_floating_point()
            and t.dtype == ember.float64]
    kw = {k: to_ember(v) for k, v in sample.kwargs.items()}
    how = "function" if op.function else "method"

    def f(*ts):
        repl = {id(t): n for t, n in zip(diff, ts)}
        xx = [repl.get(id(t), t) for t in x] if isinstance(x, list) else repl.get(id(x), x)
        aa = tuple(repl.get(id(a), a) if isinstance(a, ember.Tensor) else a for a in args)
        if op.name in RANDOM_OPS:
            ember.manual_seed(0)
        r = getattr(ember, op.name)(xx, *aa, **kw) if how == "function" else \
            getattr(xx, op.name)(*aa, **kw)
        rs = r if isinstance(r, (tuple, list)) else (r,)
        return tuple(o for o in rs if isinstance(o, ember.Tensor) and o.is_floating_point())
    return f, diff


def _dot(a, b):
    return float(sum(np.vdot(x.numpy(), y.numpy()).real for x, y in zip(a, b)))


def check_op(op):
    """'ok' after checking every sample; raises AssertionError on a mismatch. Returns
    ('no-derivative', message) when jvp raises the no-derivative error."""
    checked = 0
    for sample in _samples(op):
        f, diff = _fn(op, sample)
        if not diff:
            continue
        rng = np.random.default_rng(1)
        primals = tuple(d.detach() for d in diff)
        tangents = tuple(ember.tensor(rng.standard_normal(tuple(p.shape))) for p in primals)
        try:
            out, jv = ember.func.jvp(f, primals, tangents)
        except RuntimeError as e:
            if "no derivative formula" in str(e) or "does not support" in str(e):
                return "no-derivative", str(e).splitlines()[0]
            raise
        if not out:
            continue
        # forward_ad dual tensors agree with func.jvp
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
            for k, (o, j) in enumerate(zip(f(*duals), jv)):
                tan = fwAD.unpack_dual(o).tangent
                np.testing.assert_allclose(
                    np.zeros(tuple(o.shape)) if tan is None else tan.numpy(), j.numpy(),
                    rtol=1e-7, atol=1e-9,
                    err_msg=f"{op.name}: forward_ad vs func.jvp, output {k}, {sample}")
        # finite differences along the tangent
        if op.name not in RANDOM_OPS:
            plus = f(*[p + EPS * t for p, t in zip(primals, tangents)])
            minus = f(*[p - EPS * t for p, t in zip(primals, tangents)])
            for k, (j, a, b) in enumerate(zip(jv, plus, minus)):
                fd = (a.numpy() - b.numpy()) / (2 * EPS)
                np.testing.assert_allclose(
                    j.numpy(), fd, rtol=1e-4, atol=1e-5,
                    err_msg=f"{op.name}: jvp vs finite differences, output {k}, {sample}")
        # reverse mode: <u, J t> == <J^T u, t>
        us = tuple(ember.tensor(rng.standard_normal(tuple(o.shape))) for o in out)
        _, vjp_fn = ember.func.vjp(f, *primals)
        vt = vjp_fn(us)
        lhs, rhs = _dot(us, jv), _dot(vt, tangents)
        assert abs(lhs - rhs) <= 1e-8 + 1e-8 * max(abs(lhs), abs(rhs)), \
            f"{op.name}: <u, Jt>={lhs} != <J^T u, t>={rhs}, {sample}"
        checked += 1
    return "ok", checked


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda o: o.name)
def test_jvp_matches_finite_differences_and_vjp(op):
    status, info = check_op(op)
    if op.name in NO_DERIVATIVE:
        assert status == "no-derivative", f"{op.name} now has a jvp: remove it from " \
                                          f"NO_DERIVATIVE"
    else:
        assert status == "ok", f"{op.name}: {info}"


def main():
    counts = {"ok": 0, "no-derivative": 0, "no-samples": 0}
    samples = 0
    nod, nos = [], []
    for op in GRAD_OPS:
        status, info = check_op(op)
        if status == "ok":
            samples += info
            counts["ok" if info else "no-samples"] += 1
            if not info:
                nos.append(op.name)
        else:
            counts[status] += 1
            nod.append((op.name, info))
    print(f"{len(GRAD_OPS)} ops: {counts['ok']} checked ({samples} samples), "
          f"{counts['no-samples']} without a small float64 differentiable sample {nos}, "
          f"{counts['no-derivative']} with no derivative:")
    for n, m in nod:
        print(f"  {n}: {m}")


if __name__ == "__main__":
    main()
