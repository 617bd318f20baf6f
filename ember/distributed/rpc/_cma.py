"""Cross-memory reads: a large tensor between two processes of one host in one copy.

The sender keeps the array alive and sends only ``lend(arr, keep)``, a 24-byte descriptor
(its pid, the array's address and size); the receiver copies the bytes straight out of
the sender's memory with ``process_vm_readv(2)`` (``read``) — one copy by the kernel,
where a socket costs two plus the I/O threads' wake-ups. ``can_read(pid)`` tells whether
this process may read another's memory (same user, no seccomp or Yama rule against it);
the agent lends only to such peers and falls back to sockets and /dev/shm files.
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct

import numpy as np

_DESCRIPTOR = struct.Struct("<qQQ")      # pid, address, bytes
_libc = None


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _readv():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = getattr(libc, "process_vm_readv", None)
        if fn is not None:
            fn.restype = ctypes.c_ssize_t
            fn.argtypes = [ctypes.c_int, ctypes.POINTER(_IOVec), ctypes.c_ulong,
                           ctypes.POINTER(_IOVec), ctypes.c_ulong, ctypes.c_ulong]
        _libc = fn or False
    return _libc


def can_read(pid):
    """Whether ``process_vm_readv`` may read process ``pid``: a read of address 0 must
    fail with EFAULT (permitted, nothing there), not EPERM / ENOSYS / ESRCH."""
    fn = _readv()
    if not fn or os.environ.get("EMBER_RPC_NO_CMA"):
        return False
    byte = ctypes.create_string_buffer(1)
    local, remote = _IOVec(ctypes.addressof(byte), 1), _IOVec(0, 1)
    ctypes.set_errno(0)
    fn(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return ctypes.get_errno() == errno.EFAULT


def lend(arr, keep):
    """The descriptor of C-contiguous ndarray ``arr``, appended to ``keep`` (the sender
    holds it until the receiver has read it)."""
    keep.append(arr)
    return _DESCRIPTOR.pack(os.getpid(), arr.ctypes.data, arr.nbytes)


def read(descriptor):
    """A new uint8 ndarray holding the bytes a ``lend`` descriptor names."""
    pid, address, size = _DESCRIPTOR.unpack(bytes(descriptor))
    out = np.empty(size, np.uint8)
    fn, done = _readv(), 0
    while done < size:
        local = _IOVec(out.ctypes.data + done, size - done)
        remote = _IOVec(address + done, size - done)
        got = fn(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            code = ctypes.get_errno()
            raise RuntimeError(f"RPC could not read a tensor of {size} bytes from process "
                               f"{pid}: {os.strerror(code) if code else 'nothing read'}")
        done += got
    return out
