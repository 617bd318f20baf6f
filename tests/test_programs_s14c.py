"""Regressions found diffing everyday programs (round 9c, session 14: the from-scratch courses'
programs -- micrograd checks, makemore's bigram/MLP/batch-norm/WaveNet models, GPT from
scratch, nanoGPT/minGPT, tensor puzzles) run under torch and under ``python -m ember.run``;
each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# torch's vectorised normal_ and sum kernels were read on its AVX2 build (8 float32 lanes)
pytestmark = pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() != "AVX2",
                                reason="torch's AVX2 kernels' bits (normal_, sums)")


def _np(t):
    return t.detach().float().numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [16, 17, 20, 31, 33, 40, 100])
def test_half_randn_draws_whole_chunks_then_the_tail(dtype, n):
    # torch's normal_ for float16/bfloat16 tensors of 16+ elements draws uniforms for the whole
    # chunks of 16 only, then 16 more for the last 16 positions (float32 draws one per element
    # first): every length not a multiple of 16 ended differently
    got = ember.randn(n, dtype=getattr(ember, dtype),
                      generator=ember.Generator().manual_seed(1))
    want = torch.randn(n, dtype=getattr(torch, dtype),
                       generator=torch.Generator().manual_seed(1))
    np.testing.assert_array_equal(_np(got), _np(want))
    # and the generator is left where torch's is
    g1, g2 = ember.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    ember.randn(n, dtype=getattr(ember, dtype), generator=g1)
    torch.randn(n, dtype=getattr(torch, dtype), generator=g2)
    np.testing.assert_array_equal(_np(ember.rand(5, generator=g1)), _np(torch.rand(5, generator=g2)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_normal_in_place_with_mean_and_std(dtype):
    ember.manual_seed(11)
    torch.manual_seed(11)
    got = ember.empty(3, 13, dtype=getattr(ember, dtype)).normal_(2.0, 3.0)
    want = torch.empty(3, 13, dtype=getattr(torch, dtype)).normal_(2.0, 3.0)
    np.testing.assert_array_equal(_np(got), _np(want))


def test_makemore_sampling_streams_match_torch():
    # the bigram sampler: row-wise multinomial with a seeded generator, item by item
    rows = np.random.default_rng(0).integers(1, 9, (27, 27)).astype(np.float32)
    out = []
    for lib in (ember, torch):
        P = lib.tensor(rows)
        P = P / P.sum(1, keepdim=True)
        g = lib.Generator().manual_seed(2147483647)
        names = []
        for _ in range(6):
            ix, name = 0, []
            while True:
                ix = lib.multinomial(P[ix], num_samples=1, replacement=True, generator=g).item()
                name.append(ix)
                if ix == 0 or len(name) > 20:
                    break
            names.append(name)
        C = lib.randn((27, 10), generator=g)
        batch = lib.randint(0, 1000, (32,), generator=g)
        out.append((names, _np(C), batch.numpy()))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


@pytest.mark.parametrize("seed", [0, 1337, 2147483647])
@pytest.mark.parametrize("n", [16, 33, 1000, 65541])
def test_float32_randn_is_torchs_bit_for_bit(seed, n):
    # torch's vectorised float32 normal_ uses single-precision Cephes-style log and sincos
    # with some multiply-adds fused (Note [normal_ float32 transcendentals]); NumPy's float32
    # log/sin/cos left about one draw in seven an ulp off (GPT inits, d2l's synthetic data)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    np.testing.assert_array_equal(_np(ember.randn(n)), _np(torch.randn(n)))
    g1, g2 = ember.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    np.testing.assert_array_equal(_np(ember.empty(n).normal_(0.3, 2.5, generator=g1)),
                                  _np(torch.empty(n).normal_(0.3, 2.5, generator=g2)))
    np.testing.assert_array_equal(_np(ember.randn(n, dtype=ember.bfloat16, generator=g1)),
                                  _np(torch.randn(n, dtype=torch.bfloat16, generator=g2)))


def test_normal_init_of_a_gpt_layer_matches_torch():
    ember.manual_seed(1337)
    torch.manual_seed(1337)
    a, b = ember.nn.Linear(32, 96), torch.nn.Linear(32, 96)
    ember.nn.init.normal_(a.weight, mean=0.0, std=0.02)
    torch.nn.init.normal_(b.weight, mean=0.0, std=0.02)
    np.testing.assert_array_equal(_np(a.weight), _np(b.weight))
    e, t = ember.nn.Embedding(65, 32), torch.nn.Embedding(65, 32)
    np.testing.assert_array_equal(_np(e.weight), _np(t.weight))


def test_half_randn_large_uses_the_vectorised_functions_too():
    for dt in ("float16", "bfloat16"):
        ember.manual_seed(2)
        torch.manual_seed(2)
        np.testing.assert_array_equal(_np(ember.randn(200000, dtype=getattr(ember, dt))),
                                      _np(torch.randn(200000, dtype=getattr(torch, dt))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_of_a_broadcast_operand_is_summed_as_sum(dtype):
    # makemore's manual backprop: ``dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)``
    # equals autograd's gradient bit for bit in torch (sum_to_size sums in torch's order);
    # ember's sum_to_size summed by NumPy's pairwise order and cmp() printed exact: False
    rng = np.random.default_rng(0)
    g = (rng.standard_normal((32, 27)) * 0.01).astype(dtype)
    x = rng.standard_normal((32, 27)).astype(dtype)
    for shape, dims in [((32, 1), (1,)), ((27,), (0,)), ((1, 27), (0,)), ((1, 1), (0, 1))]:
        grads = []
        for lib in (ember, torch):
            p = lib.zeros(shape, dtype=getattr(lib, dtype), requires_grad=True)
            (lib.tensor(x) - p).backward(lib.tensor(g))
            grads.append(p.grad.numpy())
            want = (-lib.tensor(g)).sum(dims, keepdim=len(shape) == 2).numpy()
            np.testing.assert_array_equal(p.grad.numpy(), want)
        np.testing.assert_array_equal(grads[0], grads[1])
    # larger and several-axis cases: the same values as ``.sum(dims, keepdim=True)`` (which
    # is torch's for one axis; torch's sum_to_size is its sum over the same dims)
    big = rng.standard_normal((4, 300, 70)).astype(dtype)
    t = ember.tensor(big)
    np.testing.assert_array_equal(t.sum_to_size(300, 1).numpy(),
                                  t.sum((0, 2), keepdim=True)[0].numpy())
    np.testing.assert_array_equal(t.transpose(0, 2).sum_to_size(1, 300, 4).numpy(),
                                  t.transpose(0, 2).sum(0, keepdim=True).numpy())
    np.testing.assert_array_equal(t.sum_to_size(1, 300, 70).numpy(),
                                  torch.tensor(big).sum_to_size(1, 300, 70).numpy())
