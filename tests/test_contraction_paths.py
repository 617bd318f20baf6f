"""Two fast paths of the NTK benchmark (benchmarks/func.py), each checked against torch:
a two-operand einsum that is one batched matrix product (ember/_kernels/blas.py
``_pair_as_matmul``), and a grouped convolution whose groups hold the same weights, folded
into the batch (ember/_kernels/nn_conv.py ``_shared_group_weight``)."""
import numpy as np
import pytest

import ember
from ember._kernels import blas as kblas
from ember._kernels import nn_conv

torch = pytest.importorskip("torch")

PAIRS = [("Naf,Mbf->NMab", (4, 3, 7), (5, 2, 7)), ("ij,jk->ik", (3, 4), (4, 5)),
         ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("ij,ij->ij", (3, 4), (3, 4)),
         ("ij,ij->", (3, 4), (3, 4)), ("i,j->ij", (3,), (4,)), ("i,i->", (5,), (5,)),
         ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)), ("ij,kj->ki", (3, 4), (5, 4)),
         ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)), ("ij,j->i", (3, 4), (4,)),
         ("ab,cd->abcd", (2, 3), (4, 5)), ("bn,anm->bam", (2, 3), (4, 3, 5))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("eq,sa,sb", PAIRS)
def test_einsum_pair_as_one_product(eq, sa, sb, dtype):
    rng = np.random.default_rng(len(eq))
    a, b = (rng.standard_normal(s).astype(dtype) for s in (sa, sb))
    if dtype == np.complex64:
        a = a + 1j * rng.standard_normal(sa).astype(np.float32)
        b = b + 1j * rng.standard_normal(sb).astype(np.float32)
    got = ember.einsum(eq, ember.from_numpy(a), ember.from_numpy(b)).numpy()
    want = torch.einsum(eq, torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_einsum_pair_path_taken_and_skipped():
    a, b = np.ones((4, 3, 7), np.float32), np.ones((5, 2, 7), np.float32)
    assert kblas._pair_as_matmul(("Naf", "Mbf"), "NMab", a, b).shape == (4, 5, 3, 2)
    # a repeated subscript (a diagonal), a letter summed inside one operand, a broadcast
    # size-1 dimension: left to np.einsum
    sq = np.ones((3, 3), np.float32)
    assert kblas._pair_as_matmul(("ii", "i"), "i", sq, np.ones(3, np.float32)) is None
    assert kblas._pair_as_matmul(("ij", "k"), "k", sq, np.ones(3, np.float32)) is None
    assert kblas._pair_as_matmul(("ij", "ij"), "ij", np.ones((3, 1), np.float32),
                                 np.ones((3, 4), np.float32)) is None


def test_einsum_pair_transposed_operands_and_gradient():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 3, 4)).transpose(1, 2, 0)
    b = rng.standard_normal((7, 5, 2)).transpose(1, 2, 0)
    res = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = lib.einsum("Naf,Mbf->NMab", x, y)
        (out * lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(
            tuple(out.shape)))).sum().backward()
        res.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for got, want in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("transposed", [False, True])
def test_grouped_conv_with_equal_groups_folds_into_batch(transposed):
    rng = np.random.default_rng(1)
    G, cin, cout = 4, 3, 5
    one = rng.standard_normal((cin, cout, 3, 3) if transposed else (cout, cin, 3, 3))
    w = np.concatenate([one] * G).astype(np.float32)
    x = rng.standard_normal((2, G * cin, 9, 8)).astype(np.float32)
    bias = rng.standard_normal(G * cout).astype(np.float32)
    assert nn_conv._shared_group_weight(x, w, G) is not None
    w_diff = w.copy()
    w_diff[-1, 0, 0, 0] += 1
    assert nn_conv._shared_group_weight(x, w_diff, G) is None
    for weight in (w, w_diff):
        res = []
        for lib in (ember, torch):
            xt = lib.tensor(x, requires_grad=True)
            wt = lib.tensor(weight, requires_grad=True)
            bt = lib.tensor(bias, requires_grad=True)
            f = lib.nn.functional.conv_transpose2d if transposed else lib.nn.functional.conv2d
            out = f(xt, wt, bt, stride=2 if transposed else 1, padding=1, groups=G)
            out.square().sum().backward()
            res.append([out.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(),
                        bt.grad.numpy()])
        for got, want in zip(*res):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_ntk_per_sample_jacobians_match_torch():
    """vmap(jacrev) over a conv net (the weights' aliases expanded per sample, so their
    grouped convolutions have equal groups) against torch.func."""
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((3, 2, 8, 8)).astype(np.float32)
    ws = [rng.standard_normal((4, 2, 3, 3)).astype(np.float32),
          rng.standard_normal((3, 4, 3, 3)).astype(np.float32)]
    res = []
    for lib in (ember, torch):
        params = {"a": lib.tensor(ws[0]), "b": lib.tensor(ws[1])}

        def f(p, x):
            h = lib.nn.functional.conv2d(x.unsqueeze(0), p["a"]).relu()
            return lib.nn.functional.conv2d(h, p["b"]).flatten()

        jac = lib.func.vmap(lib.func.jacrev(f), (None, 0))(params, lib.tensor(xs))
        res.append([jac["a"].numpy(), jac["b"].numpy()])
    for got, want in zip(*res):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((20, 300, 1), (10, 20, 1, 10)), ((2, 1, 300, 1), (4, 1, 300)),
                                   ((300, 1), (2, 1, 400)), ((3, 4, 1), (3, 1, 5))])
def test_outer_product_matmul(sa, sb, kernel_path):
    """A matmul whose contraction has length 1 (per-sample weight gradients): the compiled
    loop for large results, the broadcast multiply otherwise, both torch's products and a
    contiguous result; the batch dimensions broadcast (here with stride-0 operands)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(sa).astype(np.float32)
    b = np.broadcast_to(rng.standard_normal((1,) + sb[1:]).astype(np.float32), sb) \
        if len(sb) == 4 else rng.standard_normal(sb).astype(np.float32)
    got = ember.matmul(ember.from_numpy(a), ember.from_numpy(np.array(b)))
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(np.array(b)))
    assert tuple(got.shape) == tuple(want.shape) and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    from ember._kernels import core
    np.testing.assert_array_equal(core._outer_products(a, b), a * b)


def test_tensordot_out_of_another_dtype_is_torchs_error():
    for lib in (ember, torch):
        a, b = lib.ones(2, 3), lib.ones(3, 4)
        for dt in (lib.long, lib.double):
            with pytest.raises(RuntimeError) as e:
                lib.tensordot(a, b, dims=1, out=lib.empty(0, dtype=dt))
            name = "Long" if dt == lib.long else "Double"
            assert str(e.value) == ("tensordot: Expected the output tensor to have dtype Float, "
                                    f"but got an output tensor with dtype {name}")
        out = lib.empty(0)
        lib.tensordot(a, b, dims=1, out=out)
        assert tuple(out.shape) == (2, 4) and float(out.sum()) == 24.0
