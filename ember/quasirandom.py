"""torch.quasirandom: ``SobolEngine``, low-discrepancy Sobol' points in [0, 1)^d.

The unscrambled sequence (Joe & Kuo's direction numbers, Gray-code order) is SciPy's
``scipy.stats.qmc.Sobol``, the same points as torch's. Scrambled engines are torch's (found by
experiment): a generator seeded with ``seed`` (else the default generator) draws the digital shift's bits,
``randint(2, (dimension, 30))`` weighted 2**0 .. 2**29, then ``randint(2, (dimension, 30,
30))``, kept lower-triangular with ones on the diagonal: one matrix per dimension that mixes
each direction number's bits, the most significant bit first. Points are the shift xor the
scrambled direction numbers of the set bits of the point index's Gray code, over 2**30; the
first point of a fresh or reset scrambled engine is the shift rounded to the default dtype
of its construction, as torch keeps it.
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
        self._engine = qmc.Sobol(dimension, scramble=False, bits=self.MAXBIT)
        self.num_generated = 0
        self._dirs = self._shift = self._first = None
        if scramble:
            self._scramble()

    def _scramble(self):
        import numpy as np

        import ember
        g = None                          # unseeded: the default generator's next values
        if self.seed is not None:
            g = ember.Generator()
            g.manual_seed(self.seed)
        d, m = self.dimension, self.MAXBIT
        bits = ember.randint(2, (d, m), generator=g).numpy().astype(np.int64)
        self._shift = bits @ (np.int64(1) << np.arange(m, dtype=np.int64))
        ltm = np.tril(ember.randint(2, (d, m, m), generator=g).numpy().astype(np.int64))
        ltm[:, np.arange(m), np.arange(m)] = 1
        weights = np.int64(1) << np.arange(m - 1, -1, -1, dtype=np.int64)   # MSB first
        sv = np.asarray(self._engine._sv, dtype=np.int64)                      # (d, m)
        vbits = (sv[:, :, None] >> np.arange(m - 1, -1, -1)) & 1                # (d, dir, bit)
        mixed = np.einsum("dij,dkj->dki", ltm, vbits) % 2                         # L @ bits
        self._dirs = mixed @ weights                                              # (d, m)
        self._first = ember.tensor(self._shift / 2.0 ** m, dtype=ember.get_default_dtype())

    def _scrambled(self, start, n):
        import numpy as np
        k = np.arange(start, start + n, dtype=np.int64)
        gray = k ^ (k >> 1)
        x = np.broadcast_to(self._shift, (n, self.dimension)).copy()
        for j in range(self.MAXBIT):
            on = ((gray >> j) & 1).astype(bool)
            x[on] ^= self._dirs[:, j]
        return x / 2.0 ** self.MAXBIT

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, (n, dimension), in ``dtype`` (default: the default dtype);
        into ``out`` when given."""
        import ember
        dt = dtype or ember.get_default_dtype()
        if n == 0 and self.num_generated == 0:    # torch: the first point, then n - 1 more
            raise RuntimeError(f"Trying to create tensor with negative dimension -1: "
                               f"[-1, {self.dimension}]")
        if self.scramble:
            result = ember.tensor(self._scrambled(self.num_generated, n), dtype=dt)
            if self.num_generated == 0 and n > 0:
                result[0] = self._first.to(dt)
        else:
            with warnings.catch_warnings():     # SciPy warns about n not a power of 2
                warnings.simplefilter("ignore", UserWarning)
                points = self._engine.random(n)
            result = ember.tensor(points, dtype=dt)
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
        if not self.scramble:
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
