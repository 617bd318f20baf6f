"""torch.backends.cpu: the SIMD level the CPU offers (read from NumPy's dispatch probe)."""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """One of ``"AVX512"``, ``"AVX2"``, ``"DEFAULT"`` (x86) / ``"SVE256"``, ``"DEFAULT"``
    (ARM), like torch's ATen dispatch level."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:       # NumPy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as feats
        except ImportError:
            return "DEFAULT"
    if all(feats.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if feats.get("AVX2") and feats.get("FMA3"):
        return "AVX2"
    if feats.get("SVE"):
        return "SVE256"
    return "DEFAULT"
