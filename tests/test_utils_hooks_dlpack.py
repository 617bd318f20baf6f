"""ember.utils.hooks and ember.utils.dlpack as torch.utils's (values against torch)."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_dlpack_round_trips_with_torch_and_numpy():
    from ember.utils import dlpack
    x = ember.arange(12.).reshape(3, 4)[:, 1:]
    t = torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(x))
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    back = dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(torch.arange(6).reshape(2, 3)))
    assert back.dtype is ember.int64 and back.tolist() == [[0, 1, 2], [3, 4, 5]]
    shared = ember.zeros(3)
    view = dlpack.from_dlpack(dlpack.to_dlpack(shared))
    view[1] = 5                                       # zero copy: the same memory
    assert shared.tolist() == [0, 5, 0]
    g = ember.ones(2, requires_grad=True)             # to_dlpack exports its data, as torch
    assert dlpack.from_dlpack(dlpack.to_dlpack(g)).tolist() == [1, 1]
    assert [(m.name, m.value) for m in dlpack.DLDeviceType] == \
        [(m.name, m.value) for m in torch.utils.dlpack.DLDeviceType]
    assert x.__dlpack_device__()[0] == dlpack.DLDeviceType.kDLCPU


def _warnings(lib, decorate):
    t = lib.ones(2, requires_grad=True)
    hook = (lambda g: g * 2)
    if decorate:
        hook = lib.utils.hooks.unserializable_hook(hook)
        assert hook.__torch_unserializable__ is True
    t.register_hook(hook)
    lib.ones(1, requires_grad=True)                   # a tensor without hooks: no warning
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.utils.hooks.warn_if_has_hooks(t)
        lib.utils.hooks.warn_if_has_hooks(lib.ones(2))
    return [str(x.message).replace(repr(hook), "HOOK") for x in w]


@pytest.mark.parametrize("decorate", [False, True])
def test_warn_if_has_hooks_as_torch(decorate):
    assert _warnings(ember, decorate) == _warnings(torch, decorate)


def test_removable_handle_is_the_modules_handle():
    from ember.utils.hooks import RemovableHandle
    m = ember.nn.Linear(2, 2)
    h = m.register_forward_hook(lambda *a: None)
    assert isinstance(h, RemovableHandle)
    h.remove()
    assert not m._forward_hooks
