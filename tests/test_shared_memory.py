"""Tensor.share_memory_ / is_shared and Module.share_memory: memory shared with forked
processes, as torch's (Hogwild training updates the parent's parameters)."""
import multiprocessing as mp

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
fork = pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")


def _fill(t, value):
    t.fill_(value)


@fork
@pytest.mark.parametrize("make", [lambda lib: lib.arange(12.).reshape(3, 4),
                                  lambda lib: lib.arange(12.).reshape(3, 4).t(),
                                  lambda lib: lib.arange(24, dtype=lib.int32)[::2]])
def test_forked_child_writes_into_the_shared_tensor(make):
    for lib in (ember, torch):
        t = make(lib)
        assert not t.is_shared()
        before = (t.shape, t.stride(), t.tolist())
        assert t.share_memory_() is t
        assert t.is_shared() and t[1:].is_shared()
        assert (t.shape, t.stride(), t.tolist()) == before
        p = mp.get_context("fork").Process(target=_fill, args=(t, 7))
        p.start()
        p.join(timeout=60)
        assert p.exitcode == 0
        assert (t == 7).all().item(), lib.__name__


def _hogwild(model, seed):
    lib = ember if isinstance(model, ember.nn.Module) else torch
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    lib.manual_seed(seed)
    for _ in range(5):
        loss = model(lib.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@fork
def test_hogwild_updates_reach_the_parent_as_in_torch():
    results = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = lib.nn.Linear(4, 1)
        init = m.weight.detach().numpy().copy()
        m.share_memory()
        assert all(p.is_shared() for p in m.parameters())
        p = mp.get_context("fork").Process(target=_hogwild, args=(m, 1))
        p.start()
        p.join(timeout=60)
        assert p.exitcode == 0
        results.append(m.weight.detach().numpy().copy())
        assert not np.allclose(init, results[-1])          # the child's steps reached us
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)
