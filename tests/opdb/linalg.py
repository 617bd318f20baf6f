"""ember.linalg records (and geqrf): covered by the dedicated tests in tests/test_linalg.py and
tests/test_householder_lowrank.py (the generic runner resolves ``getattr(ember, name)`` only,
and the linalg fronts live in ``ember.linalg``)."""
from opinfo import OpInfo


def _none(dtype, rng):
    return []


OPS = [
    OpInfo("linalg", None, _none, dtypes=("float64",), supports_grad=False, check_dtype=False,
           function=False, method=False,
           op_records=("linalg_det", "linalg_slogdet", "linalg_inv", "linalg_inv_ex",
                       "linalg_solve_ex", "linalg_solve_triangular", "linalg_cholesky",
                       "linalg_cholesky_ex", "linalg_qr", "linalg_eigh", "linalg_eig",
                       "linalg_svd", "linalg_pinv", "linalg_lstsq", "linalg_matrix_exp",
                       "linalg_lu_factor_ex", "_linalg_lu_permutation", "linalg_ldl_factor_ex",
                       "linalg_ldl_solve", "geqrf")),
]
