"""Regressions found by the strict parity run (every sample of every dtype), checked
against torch directly so they hold in the quick run too."""
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "bool", "float16"])
@pytest.mark.parametrize("size", [(1, 2), (2, 1), (1, 1), (2, 2)])
def test_sum_to_size_of_small_ints_is_int64(dtype, size):
    """Integer (and bool) reductions give int64, as torch's ``sum``: NumPy's uint8 sum would
    be uint64, a dtype ember does not have."""
    data = [[200, 100], [1, 0]] if dtype == "uint8" else [[100, 100], [1, 0]]
    t = torch.tensor(data).to(getattr(torch, dtype)).sum_to_size(size)
    e = ember.tensor(data).to(getattr(ember, dtype)).sum_to_size(size)
    assert str(e.dtype) == str(t.dtype)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 4)])
@pytest.mark.parametrize("ord", [1, -1, float("inf"), -float("inf"), 2, -2])
def test_matrix_norm_of_empty_matrices(shape, ord):
    """Positive orders reduce no column sums to 0; negative ones raise amin's error where
    the reduced dimension is empty (both as torch)."""
    try:
        t = torch.linalg.matrix_norm(torch.empty(shape), ord)
    except (RuntimeError, IndexError) as err:
        assert "amin" in str(err)
        with pytest.raises(type(err), match="amin"):
            ember.linalg.matrix_norm(ember.empty(shape), ord)
        return
    e = ember.linalg.matrix_norm(ember.empty(shape), ord)
    assert tuple(e.shape) == tuple(t.shape) and e.tolist() == t.tolist()
    assert ember.linalg.norm(ember.empty(shape[-2:]), ord).item() == 0.0 or ord < 0
