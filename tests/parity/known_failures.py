"""Ops of torch's op database that ember implements but that do not yet match torch.

op id (``name`` or ``name.variant_test_name``) -> one-line reason. Listed ops run as
``xfail(strict=True)``: once one passes, the test fails (XPASS) until it is removed here.
Refresh with ``.venv/bin/python scripts/parity_report.py --update-known-failures`` (keeps
existing reasons of ops that still fail; drops ops that pass).
"""

KNOWN_FAILURES: dict[str, str] = {
    'chalf': 'not implemented: ember has no complex32 (ComplexHalf) dtype (float32)',
}

KNOWN_STRICT_FAILURES: dict[str, str] = {
}
