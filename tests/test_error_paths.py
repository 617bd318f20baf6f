"""Error paths no other test reached (found by running the core tests under coverage):
each family is called in ember and in torch, which must raise the same class; ember's
message must name the fault."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

CASES = {
    # creation
    "tensor_ragged": (lambda L: L.tensor([[1, 2], [3]]), "expected sequence of length"),
    "tensor_unsupported_numpy": (lambda L: L.tensor(np.array(["a"])), "can't convert"),
    "from_numpy_unsupported": (lambda L: L.from_numpy(np.array([1 + 0j], np.clongdouble)),
                               "can't convert"),
    "frombuffer_empty": (lambda L: L.frombuffer(bytearray(), dtype=L.float32),
                         "must not be 0"),
    "frombuffer_bad_offset": (lambda L: L.frombuffer(bytearray(8), dtype=L.float32,
                                                     offset=16), "offset"),
    "frombuffer_too_long": (lambda L: L.frombuffer(bytearray(8), dtype=L.float32, count=4),
                            "requested buffer length"),
    "arange_complex": (lambda L: L.arange(1j), "Complex"),
    # factories' argument parsing
    "zeros_size_twice": (lambda L: L.zeros(2, size=(2,)), "size"),
    "zeros_bad_keyword": (lambda L: L.zeros(2, nonsense=1), "unexpected keyword"),
    "zeros_float_size": (lambda L: L.zeros((2.5,)), "must be tuple of ints"),
    "ones_str_size": (lambda L: L.ones("a"), None),
    "range_no_end": (lambda L: L.range(1, step=1), "end"),
    # shape ops
    "unflatten_two_minus_one": (lambda L: L.ones(6).unflatten(0, (-1, -1)),
                                "only one dimension"),
    "meshgrid_empty": (lambda L: L.meshgrid([], indexing="ij"), "non-empty"),
    "meshgrid_mixed_dtypes": (lambda L: L.meshgrid(L.ones(2), L.ones(2, dtype=L.int64),
                                                   indexing="ij"), "same dtype"),
    "cartesian_prod_2d": (lambda L: L.cartesian_prod(L.ones(2, 2), L.ones(2)), "1D vector"),
    "repeat_interleave_2d_repeats": (lambda L: L.ones(4).repeat_interleave(L.ones(2, 2,
                                     dtype=L.int64)), "repeats must be 0-dim or 1-dim"),
    "tensor_split_float_indices": (lambda L: L.ones(4).tensor_split(L.tensor([1.0])),
                                   "tensor_split expected"),
    "tensor_split_2d_indices": (lambda L: L.ones(4).tensor_split(
        L.ones(2, 2, dtype=L.int64)), "tensor_split expected"),
    "index_reduce_2d_index": (lambda L: L.ones(3).index_reduce(
        0, L.zeros(1, 1, dtype=L.int64), L.ones(1), "prod"), "vector"),
    "index_reduce_float_index": (lambda L: L.ones(3).index_reduce(
        0, L.zeros(1), L.ones(1), "prod"), "int32/int64"),
    "index_reduce_dtype_mismatch": (lambda L: L.ones(3).index_reduce(
        0, L.zeros(1, dtype=L.int64), L.ones(1, dtype=L.float64), "prod"), "source"),
    "index_reduce_count_mismatch": (lambda L: L.ones(3).index_reduce(
        0, L.zeros(2, dtype=L.int64), L.ones(1), "prod"), "Number of indices"),
    "stack_not_tensors": (lambda L: L.stack("ab"), "expected Tensor as element 0"),
    "scatter_src_and_value": (lambda L: L.ones(3).scatter(0, L.zeros(1, dtype=L.int64),
                                                          src=L.ones(1), value=1.0), None),
    # numeric fronts: torch's "invalid combination of arguments"
    "gradient_tensor_spacing": (lambda L: L.gradient(L.ones(3), spacing=L.ones(3)),
                                "invalid combination of arguments"),
    "view_copy_float_size": (lambda L: L.view_copy(L.ones(4), 2.5),
                             "invalid combination of arguments"),
    "slice_0d": (lambda L: L.ones(())[0:1], None),
    # Tensor
    "H_on_3d": (lambda L: L.ones(2, 2, 2).H, "2-D"),
    "size_dim_out_of_range": (lambda L: L.ones(2).size(3), "Dimension out of range"),
    "sparse_numpy": (lambda L: L.ones(2, 2).to_sparse().numpy(), "Sparse"),
    "bfloat16_numpy": (lambda L: L.ones(2, dtype=L.bfloat16).numpy(), "BFloat16"),
    # dispatcher: subtraction of bools
    "bool_sub": (lambda L: L.ones(2, dtype=L.bool) - L.ones(2, dtype=L.bool), "bool"),
    "where_condition_not_tensor": (lambda L: L.where([True], L.ones(1), L.ones(1)),
                                   "must be Tensor"),
    # autograd
    "backward_non_scalar": (lambda L: L.ones(2, requires_grad=True).mul(2).backward(),
                            "grad can be implicitly created only for scalar outputs"),
    "grad_unused_input": (lambda L: L.autograd.grad(L.ones(1, requires_grad=True).sum(),
                                                    L.ones(1, requires_grad=True)),
                          "appears to not have been used in the graph"),
    "backward_twice": (lambda L: _twice(L), "Trying to backward through the graph a second"),
}


def _twice(L):
    x = L.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _outcome(fn, lib):
    try:
        fn(lib)
    except Exception as e:       # noqa: BLE001 - the class is what is compared
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_path_matches_torch(name):
    fn, fragment = CASES[name]
    t_cls, _ = _outcome(fn, torch)
    e_cls, e_msg = _outcome(fn, ember)
    assert t_cls is not None, "torch accepts this call"
    assert e_cls is not None, f"ember accepts what torch refuses with {t_cls.__name__}"
    base = next(c for c in (IndexError, ValueError, TypeError, NotImplementedError,
                            RuntimeError) if issubclass(t_cls, c))
    assert issubclass(e_cls, base), (e_cls, e_msg, t_cls)
    if fragment is not None:
        assert fragment in e_msg, e_msg
