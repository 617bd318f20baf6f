"""Parity with PyTorch's own op database: every OpInfo of
``torch.testing._internal.common_methods_invocations.op_db`` whose name ember implements
(decided at collection time) must match torch on forward values, result dtype and shape,
and float64 gradients (see ``tests/parity/torch_opdb.py``). Ops listed in
``known_failures.py`` are strict xfails. ``scripts/parity_report.py`` gives the full table.
With ``EMBER_PARITY_STRICT=1`` the run is the strict one (every sample of every dtype the
OpInfos list; KNOWN_STRICT_FAILURES are expected too).
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from . import torch_opdb as H  # noqa: E402
from .known_failures import KNOWN_FAILURES, KNOWN_STRICT_FAILURES  # noqa: E402

# the strict run (EMBER_PARITY_STRICT=1: every sample of every dtype) also expects the
# failures only it finds
EXPECTED_FAILURES = {**KNOWN_FAILURES, **KNOWN_STRICT_FAILURES} if H.STRICT else KNOWN_FAILURES

try:
    OPS = H.implemented_ops()
except Exception as e:  # torch without its test internals: nothing to compare against
    pytest.skip(f"torch's op database is unavailable: {e}", allow_module_level=True)


def _param(op):
    oid = H.op_id(op)
    marks = ()
    if oid in EXPECTED_FAILURES:
        marks = (pytest.mark.xfail(strict=True, reason=EXPECTED_FAILURES[oid]),)
    return pytest.param(op, id=oid, marks=marks)


@pytest.mark.parametrize("op", [_param(op) for op in OPS])
def test_op(op, record_property):
    r = H.check_op(op)
    record_property("parity_namespace", r.namespace)
    record_property("parity_forward", r.forward)
    record_property("parity_grad", r.grad)
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id}: {r.reason}"


def test_known_failures_are_ember_ops():
    """Every entry of known_failures.py names an op of torch's op database; entries for ops
    ember no longer resolves are stale."""
    ids = {H.op_id(op) for op in H.all_ops()}
    implemented = {H.op_id(op) for op in OPS}
    listed = {**KNOWN_FAILURES, **KNOWN_STRICT_FAILURES}
    both = sorted(set(KNOWN_FAILURES) & set(KNOWN_STRICT_FAILURES))
    assert not both, f"known_failures.py lists ops in both tables: {both}"
    unknown = sorted(k for k in listed if k not in ids)
    assert not unknown, f"known_failures.py names ops not in torch's op_db: {unknown}"
    stale = sorted(k for k in listed if k not in implemented)
    assert not stale, f"known_failures.py lists ops ember does not implement: {stale}"


# ------------------------------------------------------------ the harness checks itself
# With torch standing in for ember, every op must pass (any failure is a harness bug), and
# a perturbed op must fail.

SELF_TEST_OPS = ["add", "sort", "max.reduction_with_dim", "as_strided.partial_views",
                 "linalg.svd", "linalg.eigh", "nn.functional.relu", "nn.functional.dropout",
                 "randn", "fft.rfft", "special.polygamma.special_polygamma_n_0",
                 "__getitem__", "cat", "where", "view_as_real", "to", "item", "mT",
                 "split.list_args", "nn.functional.embedding", "cumsum", "einsum"]


@pytest.fixture
def torch_as_ember(monkeypatch):
    import torch
    monkeypatch.setattr(H, "ember", torch)
    monkeypatch.setattr(H, "_imported", [])
    return torch


def test_harness_passes_torch_against_itself(torch_as_ember):
    ops = {H.op_id(op): op for op in H.all_ops()}
    bad = {}
    for oid in SELF_TEST_OPS:
        r = H.check_op(ops[oid], max_samples=3)
        if r.status != "pass":
            bad[oid] = r.reason
    assert not bad, bad


def test_harness_catches_a_wrong_op(torch_as_ember, monkeypatch):
    import types
    torch = torch_as_ember
    fake = types.ModuleType("fake_ember")
    fake.__dict__.update({k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
    fake.add = lambda *a, **k: torch.add(*a, **k) * (1 + 1e-4)
    fake.sub = lambda *a, **k: torch.sub(*a, **k).detach()       # no gradient
    monkeypatch.setattr(H, "ember", fake)
    ops = {H.op_id(op): op for op in H.all_ops()}
    r = H.check_op(ops["add"], max_samples=2)
    assert r.status == "fail" and r.forward == "fail" and "values differ" in r.reason, r
    r = H.check_op(ops["sub"], max_samples=2)
    assert r.status == "fail" and r.grad == "fail", r
