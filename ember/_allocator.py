"""Keep large freed arrays' memory mapped, so the next step's arrays reuse it (glibc only).

Note [page faults]: ember's arrays are NumPy's, allocated by the C library's ``malloc``.
glibc serves large blocks by ``mmap`` (above a threshold that starts at 128 KiB and adapts
to the largest block freed, up to 32 MiB) and gives freed memory at the top of the heap back
to the system (above a trim threshold). Either way the next training step's arrays of the
same sizes start on fresh pages, and the kernel zero-fills every page on its first write: an
MNIST-style CNN step (batch 64) took ~4,000 page faults, 48 ms instead of 38 ms, and a
ResNet-18 step at batch 8 ~1,400 (0.90 s instead of 0.73 s). torch's CPU tensors come from
the same ``malloc`` and pay the same (its CNN step: ~3,700 faults).

At import ember raises both thresholds (``mallopt``), which makes glibc behave like a
caching allocator: blocks up to 256 MiB come from the heap, and up to 1 GiB of freed heap
stays mapped for reuse. The cost is resident memory after a peak: it is kept, not returned.
Skipped where the C library is not glibc, where the user tuned glibc's malloc through its
environment variables (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
``GLIBC_TUNABLES``), and with ``EMBER_MALLOC_TUNING=0``.
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20
TRIM_THRESHOLD = 1 << 30

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


def tune_malloc(environ=os.environ):
    """Raise glibc's mmap and trim thresholds (Note [page faults]); returns whether it did."""
    if not sys.platform.startswith("linux") or environ.get("EMBER_MALLOC_TUNING") == "0":
        return False
    if any(k in environ for k in _USER_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version          # glibc only (musl has no mallopt thresholds)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
