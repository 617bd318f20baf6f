"""``jit.save`` / ``jit.load`` in torch's TorchScript archive format (each half may be
absent while the other works)."""
try:
    from ._serialization_save import save  # noqa: F401
except ImportError:  # pragma: no cover - the half being written elsewhere
    pass
try:
    from ._serialization_load import load  # noqa: F401
except ImportError:  # pragma: no cover
    pass
