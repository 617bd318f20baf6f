"""torch.backends.mps: Apple's Metal backend does not exist in ember."""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos_or_newer", "is_macos13_or_newer"]


def is_built():
    """Whether ember was built with MPS support: never."""
    return False


def is_available():
    """Whether MPS can be used: never."""
    return False


def is_macos_or_newer(major, minor):
    return False


def is_macos13_or_newer(minor=0):
    return False
