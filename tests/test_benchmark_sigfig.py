"""utils.benchmark's Measurement.significant_figures, __repr__ and trim_sigfig against
torch's, fed the same raw times (no timing happens here)."""
import numpy as np
import pytest

import ember.utils.benchmark as EB
from ember.utils.benchmark.utils.common import TaskSpec as ETaskSpec
from ember.utils.benchmark.utils.common import trim_sigfig as e_trim

torch = pytest.importorskip("torch")
import torch.utils.benchmark as TB  # noqa: E402
from torch.utils.benchmark.utils.common import TaskSpec as TTaskSpec  # noqa: E402
from torch.utils.benchmark.utils.common import trim_sigfig as t_trim  # noqa: E402


def _raw_times():
    rng = np.random.default_rng(0)
    for median in (3e-9, 5e-6, 1.3e-4, 0.7):
        for spread in (0.0, 1e-4, 1e-3, 1e-2, 0.05, 0.6):
            for n in (1, 2, 3, 4, 5, 7, 9, 20, 101):
                yield [float(t) for t in median * (1 + spread * rng.standard_normal(n))]


@pytest.mark.parametrize("per_run", [1, 10])
def test_significant_figures_and_repr_match_torch(per_run):
    differ = []
    for raw in _raw_times():
        e = EB.Measurement(per_run, raw, ETaskSpec("x = 1", "pass"))
        t = TB.Measurement(per_run, raw, TTaskSpec("x = 1", "pass"))
        if (e.significant_figures, repr(e).splitlines()[1:]) != \
                (t.significant_figures, repr(t).splitlines()[1:]):
            differ.append((raw, e.significant_figures, t.significant_figures))
    assert differ == []


def test_trim_sigfig_matches_torch():
    rng = np.random.default_rng(1)
    values = [np.float64(v) for v in np.concatenate([10 ** rng.uniform(-9, 3, 400),
                                                     [1.0, 10.0, 999.95, 0.0095, -0.044]])]
    got = [e_trim(v, n) for v in values for n in (1, 2, 3, 4)]
    want = [t_trim(v, n) for v in values for n in (1, 2, 3, 4)]
    assert got == want
