"""Op database entries for the fft, special, complex and spectral records. Their public
names are dotted (``fft.fft``, ``special.erfcx``) or need hand-written checks, so the
entries only list the records (empty sample generators); the checks live in
tests/test_fft.py, tests/test_special.py and tests/test_complex.py."""
from opinfo import OpInfo


def _none(dtype, rng):
    return []


_SPECIAL = ["special_" + n for n in (
    "erfcx", "ndtr", "ndtri", "log_ndtr", "i0e", "i1", "i1e", "entr", "xlog1py", "zeta",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")]

OPS = [
    OpInfo("fft.fft", None, _none, op_records=("_fft_c2c", "_fft_r2c", "_fft_c2r"),
           supports_grad=False),
    OpInfo("special.erfcx", None, _none, op_records=tuple(_SPECIAL), supports_grad=False),
    OpInfo("igamma", None, _none, op_records=("igamma", "igamma_", "igammac", "igammac_"),
           supports_grad=False),
    OpInfo("view_as_real", None, _none, op_records=("view_as_real", "view_as_complex"),
           supports_grad=False),
]
