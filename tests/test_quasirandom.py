"""ember.quasirandom.SobolEngine against torch's: the unscrambled sequence point for point,
draw/draw_base2/fast_forward/reset bookkeeping, dtypes, errors; scrambled points keep the
Sobol' properties (and are torch's values for a seed: tests/test_programs_s16a.py)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dim", [1, 5, 1111])
def test_unscrambled_points_equal_torchs(dim):
    e, t = ember.quasirandom.SobolEngine(dim), torch.quasirandom.SobolEngine(dim)
    for n in (1, 7, 8):
        np.testing.assert_array_equal(e.draw(n, dtype=ember.float64).numpy(),
                                      t.draw(n, dtype=torch.float64).numpy())
    e.fast_forward(5), t.fast_forward(5)
    np.testing.assert_array_equal(e.draw(3).numpy(), t.draw(3).numpy())
    assert e.num_generated == t.num_generated == 24
    e.reset(), t.reset()
    np.testing.assert_array_equal(e.draw_base2(2).numpy(), t.draw_base2(2).numpy())


def _outcome(fn):
    try:
        r = fn()
        return ("ok", r.dtype.__repr__() if hasattr(r, "dtype") else repr(r),
                tuple(r.shape) if hasattr(r, "shape") else None)
    except Exception as e:                     # noqa: BLE001 - compared below
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("case", ["repr", "scrambled repr", "dim 0", "dim too large",
                                  "draw default", "draw 0", "base2 unbalanced", "out"])
def test_api_as_torch(case):
    def run(lib):
        Q = lib.quasirandom.SobolEngine
        return {
            "repr": lambda: Q(3),
            "scrambled repr": lambda: Q(3, scramble=True, seed=1),
            "dim 0": lambda: Q(0),
            "dim too large": lambda: Q(21202),
            "draw default": lambda: Q(2).draw(),
            "draw 0": lambda: (lambda q: (q.draw(), q.draw(0))[1])(Q(2)),
            "base2 unbalanced": lambda: (lambda q: (q.draw(3), q.draw_base2(2)))(Q(3))[1],
            "out": lambda: (lambda o: (Q(2).draw(3, out=o), o)[1])(lib.empty(0)),
        }[case]()
    assert _outcome(lambda: run(ember)) == _outcome(lambda: run(torch))


def test_scrambled_points_are_sobol_points():
    pts = ember.quasirandom.SobolEngine(4, scramble=True, seed=3).draw(256).numpy()
    assert pts.shape == (256, 4) and pts.min() >= 0 and pts.max() < 1
    # a (0, m, d)-net property in each coordinate: every 1/256 interval holds one point
    for j in range(4):
        assert np.array_equal(np.sort(np.floor(pts[:, j] * 256)), np.arange(256))
    again = ember.quasirandom.SobolEngine(4, scramble=True, seed=3).draw(256).numpy()
    np.testing.assert_array_equal(pts, again)


def test_functional_and_types_modules():
    assert sorted(ember.functional.__all__) == sorted(torch.functional.__all__)
    assert all(getattr(ember.functional, n) is getattr(ember, n)
               for n in ember.functional.__all__)
    from ember.types import Device, Number, _int, _size  # noqa: F401
    assert isinstance(3.5, Number.__args__) and _int is int
