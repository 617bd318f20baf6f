"""torch._dynamo.exc: the exception classes ``torch.compile``'s argument checks raise."""
from __future__ import annotations

__all__ = ["TorchDynamoException", "InvalidBackend"]


class TorchDynamoException(RuntimeError):
    pass


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         f"available backends.")
