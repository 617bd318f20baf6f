"""Regressions found diffing everyday PyTorch programs (round 3, session 8) run under torch
and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().float().numpy() if t.is_floating_point() else t.detach().numpy()


def test_round_with_decimals_is_the_decimals_overload():
    # passing decimals (even 0) is round.decimals: RoundBackward1, and for integers the
    # round_vml_cpu error; without it RoundBackward0 and integers pass through
    for lib in (torch, ember):
        x = lib.tensor([0.125, -1.5, 2.5], requires_grad=True)
        names = [type(y.grad_fn).__name__ for y in (
            x.round(), x.round(decimals=2), lib.round(x, decimals=0),
            x.clone().round_(decimals=0), x.clone().round_())]
        assert names == ["RoundBackward0", "RoundBackward1", "RoundBackward1",
                         "RoundBackward1", "RoundBackward0"]
        np.testing.assert_array_equal(_np(x.round(decimals=0)), [0., -2., 2.])
        assert lib.round(lib.tensor([15, 25])).tolist() == [15, 25]
        with pytest.raises(NotImplementedError, match="round_vml_cpu"):
            lib.round(lib.tensor([15, 25]), decimals=0)
