"""Tensor.numpy() / np.asarray(tensor) give a new array object on the tensor's memory, as
torch does: writes go through, but setting the array's shape leaves the tensor alone."""
import numpy as np

import ember


def test_numpy_array_is_a_new_object_sharing_memory():
    t = ember.arange(6.0)
    a = t.numpy()
    a.shape = (2, 3)
    b = np.asarray(t)
    b.shape = (3, 2)
    assert tuple(t.shape) == (6,) and a.shape == (2, 3) and b.shape == (3, 2)
    a[0, 0] = 9.0
    assert t[0].item() == 9.0 and np.shares_memory(a, t.numpy())
    x = np.arange(4.0)
    u = ember.from_numpy(x)
    assert u.numpy() is not x and np.shares_memory(u.numpy(), x)
