import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _protocol_wrappers_undone():
    """A test whose Tensor subclass overrides ``__torch_function__`` makes ember wrap
    nn.functional's and the top-level Python functions for the rest of the process
    (ember/overrides.py); put the plain functions back after it, so later tests (FX and JIT
    pattern tables compare functions) see the program they were written for."""
    yield
    from ember import overrides
    if overrides._FUNCTIONAL_WRAPPED:
        overrides._unwrap_functional()


# Note [host-dependent oracles]: the tests listed in tests/host_dependent.txt compare bit for
# bit with torch's x86 kernels (or with OpenBLAS's AVX-512 GEMM kernels), which give other
# bits on a CPU without AVX-512 VNNI: there they are expected to fail (not strictly: a pass
# is fine). On a CPU with VNNI they run as written. The tests in tests/avx2_order.txt compare
# bit for bit with sums in the lane order of torch's AVX2 kernels, which ember follows
# (ember/_kernels/torch_sum.py); where torch runs its AVX-512 kernels they are expected to
# fail in the last bits in the same way.
@pytest.fixture(params=["compiled", "numpy"])
def kernel_path(request):
    """Runs a test on ember's compiled kernels (skipped without numba), then again with them
    switched off (helpers.compiled_kernels)."""
    from helpers import compiled_kernels
    yield from compiled_kernels("numba" if request.param == "compiled" else "numpy")


def _host_has_vnni():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:
        return True
    return bool(f.get("AVX512VNNI") and f.get("AVX512F"))


def _listed(name):
    with open(os.path.join(os.path.dirname(__file__), name)) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def _openblas_runs_avx512():
    """Whether NumPy's OpenBLAS runs its AVX-512 GEMM kernels (SkylakeX and later): OpenBLAS
    0.3.31 takes a Zen 5 EPYC (AVX-512 and VNNI) for a Haswell, whose kernels also give other
    bits for a block of rows than for the whole."""
    try:
        import threadpoolctl
        archs = [i.get("architecture") or "" for i in threadpoolctl.threadpool_info()
                 if i.get("internal_api") == "openblas"]
    except Exception:
        return True
    return not archs or any(a.lower() in ("skylakex", "cooperlake", "sapphirerapids")
                            for a in archs)


def _torch_runs_avx512():
    """Whether torch's vectorised kernels here are its AVX-512 ones (ember.backends.cpu
    reads the CPU as torch does; torch honours ATEN_CPU_CAPABILITY too)."""
    forced = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if forced:
        return forced == "avx512"
    from ember.backends import cpu
    return cpu.get_cpu_capability() == "AVX512"


def pytest_collection_modifyitems(config, items):
    marks = {}
    if not _host_has_vnni():
        mark = pytest.mark.xfail(strict=False, reason="bits of torch's or OpenBLAS's kernels on "
                                 "a CPU without AVX-512 VNNI (Note [host-dependent oracles])")
        marks.update(dict.fromkeys(_listed("host_dependent.txt"), mark))
    elif not _openblas_runs_avx512():
        mark = pytest.mark.xfail(strict=False, reason="bits of OpenBLAS's Haswell kernels, "
                                 "which it runs on this AVX-512 CPU (Note [host-dependent "
                                 "oracles])")
        marks.update(dict.fromkeys((t for t in _listed("host_dependent.txt")
                                    if t.startswith("tests/test_threads.py::")), mark))
    if _torch_runs_avx512():
        mark = pytest.mark.xfail(strict=False, reason="torch's AVX-512 kernels sum in another "
                                 "lane order than the AVX2 one ember follows (Note "
                                 "[host-dependent oracles])")
        marks.update(dict.fromkeys(_listed("avx2_order.txt"), mark))
    for item in items:
        if item.nodeid in marks:
            item.add_marker(marks[item.nodeid])
