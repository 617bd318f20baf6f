"""Helpers shared by the DataLoader and its worker processes."""
import sys
import traceback

from ember.utils.data._utils import collate, fetch, pin_memory, worker  # noqa: F401

IS_WINDOWS = sys.platform == "win32"
HAS_NUMPY = True
# how often (seconds) a blocked queue read wakes up to check that its peer is still alive
MP_STATUS_CHECK_INTERVAL = 5.0


class ExceptionWrapper:
    """An exception caught in one process, re-raised (with its traceback text) in another."""

    def __init__(self, exc_info=None, where="in background"):
        kind, value, tb = sys.exc_info() if exc_info is None else exc_info
        self.exc_type, self.where = kind, where
        self.exc_msg = "".join(traceback.format_exception(kind, value, tb))

    def reraise(self):
        text = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            text = KeyErrorMessage(text)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=text)
        try:
            err = self.exc_type(text)
        except Exception:
            # the type cannot be built from a single message: fall back to RuntimeError
            raise RuntimeError(text) from None
        raise err


class KeyErrorMessage(str):
    """A message that KeyError will not wrap in quotes (its repr is itself)."""

    def __repr__(self):
        return self
