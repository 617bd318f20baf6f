"""Ops of torch's op database that ember implements but that do not yet match torch.

op id (``name`` or ``name.variant_test_name``) -> one-line reason. Listed ops run as
``xfail(strict=True)``: once one passes, the test fails (XPASS) until it is removed here.
Refresh with ``.venv/bin/python scripts/parity_report.py --update-known-failures`` (keeps
existing reasons of ops that still fail; drops ops that pass).
"""

KNOWN_FAILURES: dict[str, str] = {
    'addr': 'alpha=0 drops NaN/inf from vec1 (x) vec2: torch.addr(zeros(1,1), [nan], [1.], beta=0, alpha=0) is nan in torch, 0 in ember',
    'arange': 'integer args, negative step dividing the range exactly: arange(0, -8, -4) gives [0, -4, -8] (torch: [0, -4])',
    'clamp_max': "bool tensors with a tensor bound raise NotImplementedError ('clamp_cpu' for Bool); torch supports them",
    'clamp_min': "bool tensors with a tensor bound raise NotImplementedError ('clamp_cpu' for Bool); torch supports them",
    'conj_physical': 'bool input: ember returns int8 (np.conjugate promotes), torch keeps bool',
    'flip': 'Tensor.flip(dims=...) keyword not accepted (method takes *dims only)',
    'gather': "empty uint8 index: torch accepts it (returns empty), ember raises 'Expected dtype int32/int64 for index'",
    'gradient': 'explicit spacing=None raises TypeError in div (torch treats it as unit spacing)',
    'index_fill': 'grad w.r.t. a 0-d value tensor counts duplicate indices once per occurrence (index [1,1,3]: ember 3, torch 2)',
    'logcumsumexp': 'complex inputs not implemented',
    'mode': '1-D input with the default dim, keepdim=False: values/indices have shape (1,) instead of ()',
    'nextafter': "grad w.r.t. self is 0; torch's derivative passes the gradient through (1)",
    'norm.nuc': "p='nuc' needs ember.linalg (not implemented)",
    'sum_to_size': '0-d bool input, size (): torch returns an int64 sum, ember returns the bool input',
    'take_along_dim': "negative indices rejected ('index -1 is out of bounds'); torch wraps them",
    'zero_': 'torch.zero_ (function form) missing; only Tensor.zero_ exists',
}
