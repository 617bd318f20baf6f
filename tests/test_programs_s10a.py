"""Regressions found diffing whole training programs (round 5a, session 10) run under torch
and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().float().numpy() if t.is_floating_point() else t.detach().numpy()


@pytest.mark.parametrize("kind", ["GRU", "RNN", "LSTM"])
def test_recurrent_layer_takes_bfloat16_input_under_autocast(kind):
    # a conv's bfloat16 output fed to a float32 GRU/RNN/LSTM under CPU autocast: torch skips
    # the input/weight dtype check there and runs in bfloat16; ember raised ValueError
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(3, 4, batch_first=True)
    mine = getattr(ember.nn, kind)(3, 4, batch_first=True)
    mine.load_state_dict({k: ember.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want, _ = ref(torch.tensor(x).bfloat16())
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got, _ = mine(ember.tensor(x).bfloat16())
    assert str(got.dtype) == str(want.dtype) == "torch.bfloat16"
    np.testing.assert_allclose(_np(got), _np(want), atol=3e-2)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        mine(ember.tensor(x).bfloat16())
