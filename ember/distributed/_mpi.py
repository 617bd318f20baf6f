"""ember's communication engine: MPI through mpi4py (the optional extra ``distributed``).

Processes that were started separately (``ember.multiprocessing.spawn``, the launcher,
a cluster scheduler) become one MPI communicator through the rendezvous store: rank 0
opens an MPI port and publishes its name; the other ranks connect in rank order and each
connection is merged into the growing intracommunicator (``Accept``/``Connect``/``Merge``),
then ``Split`` orders the ranks. Processes started by ``mpiexec`` already share
``COMM_WORLD`` and use it directly.

Every operation is nonblocking and polled against a deadline (``wait``), so a collective
that a peer never joins raises ``DistBackendError`` naming the operation after the group's
timeout instead of hanging.
"""
from __future__ import annotations

import os
import time

import ml_dtypes
import numpy as np

__all__ = ["mpi", "available", "join_world", "wait", "datatype", "reduce_op"]

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module, imported (and MPI initialized) on first use."""
    global _MPI
    if _MPI is None:
        os.environ.setdefault("UCX_LOG_LEVEL", "error")     # no warnings at interpreter exit
        try:
            import mpi4py
        except ImportError:
            raise RuntimeError(
                "ember.distributed needs MPI: install the optional extra "
                "'ember[distributed]' (mpi4py and MPICH)") from None
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def available():
    try:
        mpi()
    except RuntimeError:
        return False
    return True


def launched_by_mpiexec():
    """True when this process is one of several that ``mpiexec`` started together."""
    return any(k in os.environ for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")) \
        and mpi().COMM_WORLD.Get_size() > 1


def join_world(store, rank, world_size, deadline):
    """One intracommunicator over ``world_size`` processes, ordered by ``rank``.

    Rank 0 publishes a port; rank r waits for its turn (``turn/r``), announces itself,
    connects and is merged; everyone already merged takes part in the next accepts."""
    MPI = mpi()
    if world_size == 1:
        return MPI.COMM_SELF.Dup()
    if launched_by_mpiexec() and MPI.COMM_WORLD.Get_size() == world_size:
        return MPI.COMM_WORLD.Split(0, rank)
    comm = MPI.COMM_SELF
    port = None
    if rank == 0:
        port = MPI.Open_port()
        store.set("port", port)
    else:
        _await_key(store, f"turn/{rank}", deadline)
        port = store.get("port").decode()
        store.set(f"ready/{rank}", b"1")
        comm = MPI.COMM_SELF.Connect(port, root=0).Merge(high=True)
    for newcomer in range(max(rank + 1, 1), world_size):
        if comm.Get_rank() == 0:
            store.set(f"turn/{newcomer}", b"1")
            _await_key(store, f"ready/{newcomer}", deadline)
        comm = comm.Accept(port if comm.Get_rank() == 0 else None, root=0).Merge(high=False)
    if rank == 0:
        MPI.Close_port(port)
    world = comm.Split(0, rank)
    world.Set_errhandler(MPI.ERRORS_RETURN)
    return world


def _await_key(store, key, deadline):
    from datetime import timedelta
    left = max(deadline - time.monotonic(), 0.001)
    store.wait([key], timedelta(seconds=left))


def wait(request, deadline, describe, status=None):
    """Poll ``request`` until it completes; past ``deadline`` raise DistBackendError with
    ``describe()`` (the operation, group and timeout). Spins briefly, then yields the core
    so that more ranks than cores still make progress."""
    if request.Test(status):
        return
    spins = 0
    pause = 0.0
    while not request.Test(status):
        spins += 1
        if spins < 200:
            continue
        if time.monotonic() > deadline:
            from ember.distributed._errors import DistBackendError
            raise DistBackendError(describe())
        if spins < 2000:
            os.sched_yield()
        else:                       # a long wait (a peer still computing): back off
            pause = min(pause + 2e-5, 1e-3)
            time.sleep(pause)


# ---------------------------------------------------------------- datatypes and reductions
_NATIVE = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int16,
                                 np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                                 np.bool_, np.complex64, np.complex128)}
_custom_types = {}
_custom_ops = {}


def datatype(dtype):
    """The MPI datatype of one element of ``dtype`` (a contiguous byte type for float16,
    bfloat16 and other types MPI lacks, so that message segments stay element-aligned)."""
    MPI = mpi()
    if dtype in _NATIVE:
        return MPI._typedict[dtype.char]
    t = _custom_types.get(dtype)
    if t is None:
        t = _custom_types[dtype] = MPI.BYTE.Create_contiguous(dtype.itemsize).Commit()
    return t


def _integral(dtype):
    return dtype.kind in "iub"


# ReduceOp name -> (MPI op name for numbers, for booleans, NumPy ufunc for custom types)
_RULES = {
    "SUM": ("SUM", "LOR", np.add), "AVG": ("SUM", "LOR", np.add),
    "PREMUL_SUM": ("SUM", "LOR", np.add),
    "PRODUCT": ("PROD", "LAND", np.multiply), "MIN": ("MIN", "LAND", np.minimum),
    "MAX": ("MAX", "LOR", np.maximum), "BAND": ("BAND", "LAND", np.bitwise_and),
    "BOR": ("BOR", "LOR", np.bitwise_or), "BXOR": ("BXOR", "LXOR", np.bitwise_xor),
}


def reduce_op(name, dtype):
    """The MPI reduction for torch's ``ReduceOp`` ``name`` on elements of ``dtype``."""
    MPI = mpi()
    number, logical, ufunc = _RULES[name]
    if dtype == np.bool_:
        return getattr(MPI, logical)
    if dtype in _NATIVE:
        return getattr(MPI, number)
    key = (name, dtype)
    op = _custom_ops.get(key)
    if op is None:
        def combine(inbuf, inoutbuf, _datatype, ufunc=ufunc, dtype=dtype):
            a = np.frombuffer(inbuf, dtype)
            b = np.frombuffer(inoutbuf, dtype)
            ufunc(a, b, out=b)
        op = _custom_ops[key] = MPI.Op.Create(combine, commute=True)
    return op


_ = ml_dtypes     # bfloat16 and the float8 types reach `datatype` as NumPy dtypes
