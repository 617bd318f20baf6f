"""Ops of torch's op database that ember implements but that do not yet match torch.

op id (``name`` or ``name.variant_test_name``) -> one-line reason. Listed ops run as
``xfail(strict=True)``: once one passes, the test fails (XPASS) until it is removed here.
Refresh with ``.venv/bin/python scripts/parity_report.py --update-known-failures`` (keeps
existing reasons of ops that still fail; drops ops that pass).
"""

KNOWN_FAILURES: dict[str, str] = {
    'cholesky': "grad on an empty (0, 0) matrix: backward raises 'cannot reshape array of size 0 into shape (0,0)'",
    'cholesky_inverse': "empty (0, 0) input raises 'cannot reshape array of size 0 into shape (0,0)'",
    'cholesky_solve': "empty (0, 0) inputs raise 'cannot reshape array of size 0 into shape (0,0)'",
    'lu': 'grad for non-square inputs not implemented (linalg.lu_factor derivative is square-only)',
    'lu_solve': "empty B (3, 0) raises 'cannot reshape array of size 0'; also wrong values for adjoint=True, left=False (see linalg.lu_solve)",
    'nn.functional.avg_pool1d': 'int64 input returns float32 (torch keeps int64); grad on an empty batch raises a reshape error',
    'nn.functional.avg_pool3d': 'int64 input returns float32 (torch keeps int64); grad on an empty batch raises a reshape error',
    'nn.functional.unfold': 'empty batch (0, 1, 5, 5) raises "shape \'[0, 4, -1]\' is invalid"',
    'nn.functional.avg_pool2d': 'int64 input returns float32 (torch keeps int64)',
    'nn.functional.batch_norm': "empty 1-D input with empty running stats raises 'running_mean should contain 0 elements not 0'",
    'qr': "grad on an empty (5, 0) input: backward raises 'cannot reshape array of size 0 into shape (0,0)'",
    'chalf': 'not implemented: ember has no complex32 (ComplexHalf) dtype (float32)',
    'linalg.cholesky': 'grad on an empty (0, 0) matrix: backward raises a reshape error',
    'linalg.cholesky_ex': 'grad on an empty (0, 0) matrix: backward raises a reshape error',
    'linalg.householder_product': "empty inputs: the output does not require grad (torch's does)",
    'linalg.ldl_factor': "empty (0, 0) input raises 'cannot reshape array of size 0 into shape (0,0)'",
    'linalg.ldl_factor_ex': "empty (0, 0) input raises 'cannot reshape array of size 0 into shape (0,0)'",
    'linalg.lstsq': "grad through the residuals output is wrong (the solution's grad matches)",
    'linalg.lstsq.grad_oriented': "grad through the residuals output is wrong (the solution's grad matches)",
    'linalg.matrix_power': "n=0: the output does not require grad (torch's does, with a zero gradient)",
    'linalg.qr': 'grad on an empty (5, 0) input: backward raises a reshape error',
    'linalg.vander': "0-d input rejected ('x must have at least one dimension'); torch accepts it",
    'linalg.lu_factor': 'grad for non-square inputs not implemented',
    'linalg.lu_factor_ex': 'grad for non-square inputs not implemented',
    'linalg.lu': 'grad for non-square inputs not implemented',
}
