"""``torch.distributed``'s exception classes (all ``RuntimeError`` subclasses, as in torch)."""

__all__ = ["DistError", "DistStoreError", "DistNetworkError", "DistBackendError",
           "QueueEmptyError"]


class DistError(RuntimeError):
    """Base of the errors raised by ``torch.distributed``."""


class DistBackendError(DistError):
    """A collective backend failed."""


class DistStoreError(DistError):
    """A store operation failed or timed out."""


class DistNetworkError(DistError):
    """A socket could not connect, listen, send or receive."""


class QueueEmptyError(DistStoreError):
    """``queue_pop(key, block=False)`` found the queue empty."""
