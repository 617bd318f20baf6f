"""Ops of torch's op database that ember implements but that do not yet match torch.

op id (``name`` or ``name.variant_test_name``) -> one-line reason. Listed ops run as
``xfail(strict=True)``: once one passes, the test fails (XPASS) until it is removed here.
KNOWN_FAILURES fail the quick run (and the strict one); KNOWN_STRICT_FAILURES only
the strict run (every sample and dtype: ``EMBER_PARITY_STRICT=1``).
Refresh with ``.venv/bin/python scripts/parity_report.py [--strict] --update-known-failures``
(keeps existing reasons of ops that still fail; drops ops that pass).
"""

KNOWN_FAILURES: dict[str, str] = {
    'sparse.mm.reduce': 'harness cannot convert sample: torch.sparse_csr tensors (float32)',
    'sparse.sampled_addmm': 'harness cannot convert sample: torch.sparse_csr tensors (float32)',
}

KNOWN_STRICT_FAILURES: dict[str, str] = {
    'addbmm': "in-place variant: ember raised RuntimeError: output with shape [1] doesn't match the broadcast shape [5, 10] (float16) -- torch's addbmm_ resizes a 1-element self to the result's shape",
    'matrix_exp': "output: 125/125 values differ (max abs diff nan, rtol=0.001, atol=1e-05); at (0, 0, 0) expected nan got 2454.0 (float16) -- torch's float16 matrix_exp overflows to NaN; ember's result is finite, near the float64 one",
}
