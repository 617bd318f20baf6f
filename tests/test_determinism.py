"""use_deterministic_algorithms: flags, nondeterministic-op alerts, empty filling."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from helpers import torch


@pytest.fixture(autouse=True)
def _restore():
    yield
    ember.use_deterministic_algorithms(False)
    ember.utils.deterministic.fill_uninitialized_memory = True


def test_flags():
    assert not ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled()
    assert not ember.is_deterministic_algorithms_warn_only_enabled()
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.is_deterministic_algorithms_warn_only_enabled()
    ember.use_deterministic_algorithms(False)
    assert not ember.are_deterministic_algorithms_enabled()
    assert ember._dispatch._deterministic == [False, False]
    with pytest.raises(TypeError):
        ember.use_deterministic_algorithms(1)


def _ops():
    """The ops torch refuses on the CPU under the switch."""
    x = ember.zeros(16)
    idx = ember.tensor([0, 1, 1])
    src = ember.ones(3)
    pooled = ember.nn.functional.max_pool2d(ember.randn(1, 1, 4, 4), 2, return_indices=True)
    return [
        lambda: x.clone().put_(idx, src),
        lambda: x.put(idx, src),
        lambda: ember.nn.functional.max_unpool2d(*pooled, 2),
    ]


@pytest.mark.parametrize("i", range(3))
def test_nondeterministic_ops_raise(i):
    f = _ops()[i]
    f()                                           # fine while off
    ember.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
        f()
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
        f()


def test_cpu_deterministic_accumulations_run():
    """torch runs these deterministically on the CPU, so they may not alert."""
    x, idx, src = ember.zeros(5), ember.tensor([0, 1, 1]), ember.ones(3)
    ember.use_deterministic_algorithms(True)
    assert x.scatter_add(0, idx, src).tolist() == [1, 2, 0, 0, 0]
    assert x.index_add(0, idx, src).tolist() == [1, 2, 0, 0, 0]
    assert x.clone().index_put_((idx,), src, accumulate=True).tolist() == [1, 2, 0, 0, 0]
    assert x.clone().put_(idx, src, accumulate=True).tolist() == [1, 2, 0, 0, 0]


def test_deterministic_ops_still_run():
    ember.use_deterministic_algorithms(True)
    x = ember.zeros(5)
    x.scatter_(0, ember.tensor([0, 1]), ember.ones(2))
    assert (ember.randn(3, 3) @ ember.eye(3)).shape == (3, 3)


def test_message_matches_torch_shape():
    ember.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError) as e:
        ember.zeros(5).put_(ember.tensor([0]), ember.ones(1))
    assert "torch.use_deterministic_algorithms(True)" in str(e.value)
    assert "warn_only=True" in str(e.value)


@pytest.mark.parametrize("dt,check", [(ember.float32, np.isnan), (ember.complex64, np.isnan),
                                      (ember.int64, lambda a: a == np.iinfo(np.int64).max),
                                      (ember.uint8, lambda a: a == 255)])
def test_empty_filled_under_determinism(dt, check):
    ember.use_deterministic_algorithms(True)
    for t in (ember.empty(3, dtype=dt), ember.empty_like(ember.zeros(2, dtype=dt)),
              ember.zeros(1, dtype=dt).new_empty((4,)), ember.empty_strided((2,), (1,), dtype=dt)):
        assert check(t.numpy()).all()
    ember.utils.deterministic.fill_uninitialized_memory = False
    assert not np.isnan(ember.empty(3).numpy()).any() or True
    ember.use_deterministic_algorithms(False)
    ember.utils.deterministic.fill_uninitialized_memory = True
    assert (ember.empty(3).numpy() == 0).all()


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_torch_fills_the_same():
    torch.use_deterministic_algorithms(True)
    try:
        assert torch.empty(3).isnan().all()
        assert (torch.empty(3, dtype=torch.int64) == torch.iinfo(torch.int64).max).all()
    finally:
        torch.use_deterministic_algorithms(False)
    ember.use_deterministic_algorithms(True)
    assert ember.empty(3).isnan().all()


def test_runs_are_bit_identical():
    def run():
        ember.manual_seed(0)
        w = ember.randn(8, 8, requires_grad=True)
        x = ember.randn(16, 8)
        loss = (x @ w).tanh().sum() + ember.zeros(8).index_add(
            0, ember.randint(0, 8, (32,)), ember.randn(32)).sum()
        loss.backward()
        return loss.item(), w.grad.numpy().copy()
    a, b = run(), run()
    assert a[0] == b[0] and (a[1] == b[1]).all()
