"""Dropout masks drawn as torch draws them (same seed, same values): alpha dropout and the
dropout between stacked LSTM/GRU layers (batch-first and packed inputs)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_masks_as_torch(feature):
    x = np.random.default_rng(0).standard_normal((4, 6, 3)).astype(np.float32)
    outs = []
    for lib in (ember, torch):
        lib.manual_seed(1)
        fn = lib.nn.functional.feature_alpha_dropout if feature else \
            lib.nn.functional.alpha_dropout
        outs.append(fn(lib.tensor(x), 0.3, True).numpy())
        outs.append(lib.rand(1).numpy())               # the generator moved alike
    np.testing.assert_allclose(outs[0], outs[2], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(outs[1], outs[3])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("batch_first,bidirectional,packed",
                         [(True, False, False), (True, True, False), (False, False, True),
                          (True, True, True)])
def test_dropout_between_rnn_layers_as_torch(mode, batch_first, bidirectional, packed):
    results = []
    x_np = np.random.default_rng(2).standard_normal((3, 5, 4) if batch_first else (5, 3, 4))
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, mode)(4, 6, num_layers=3, dropout=0.5, batch_first=batch_first,
                                  bidirectional=bidirectional)
        sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        if lib is torch:                            # ember's weights in both
            m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in results[0][3].items()})
        x = lib.tensor(x_np.astype(np.float32), requires_grad=True)
        inp = x
        if packed:
            inp = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([5, 4, 2]),
                                                        batch_first=batch_first)
        lib.manual_seed(5)
        out = m(inp)[0]
        out = out.data if packed else out
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), lib.rand(1).numpy(), sd))
    (eo, eg, er, _), (to, tg, tr, _) = results
    np.testing.assert_allclose(eo, to, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eg, tg, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(er, tr)
