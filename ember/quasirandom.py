"""torch.quasirandom: ``SobolEngine``, low-discrepancy Sobol' points in [0, 1)^d.

The unscrambled sequence (Joe & Kuo's direction numbers, Gray-code order) is SciPy's
``scipy.stats.qmc.Sobol``, the same points as torch's. Scrambled engines use SciPy's
scrambling (random linear matrix scramble + digital shift, seeded by ``seed``): points with
the same properties, but not torch's values for a given seed.
"""
from __future__ import annotations

import warnings

__all__ = ["SobolEngine"]


class SobolEngine:
    """``SobolEngine(dimension, scramble=False, seed=None)``; ``draw(n)`` -> (n, dimension)
    points in the default dtype, continuing the sequence."""
    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        from scipy.stats import qmc
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self._engine = qmc.Sobol(dimension, scramble=scramble, seed=seed, bits=self.MAXBIT)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, (n, dimension), in ``dtype`` (default: the default dtype);
        into ``out`` when given."""
        import ember
        with warnings.catch_warnings():     # SciPy warns about n not a power of 2; torch not
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        result = ember.tensor(points, dtype=dtype or ember.get_default_dtype())
        self.num_generated += n
        if out is not None:
            out.resize_(result.shape).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2**m`` points; the total drawn must stay a power of 2 (Sobol' points
        keep their balance properties only then)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a "
                             f"power of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total}. If you "
                             f"still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n, out, dtype)

    def reset(self):
        """Back to the first point."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip the next ``n`` points."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(parts)})"
