"""Regressions found diffing everyday programs (round 7, session 12: classic training loops,
tensor idioms, printing, nn.utils, the module API, dtype promotion, autocast and complex
programs) run under torch and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [4096, 5000, 20000, 100003, (1 << 20) + 77])
def test_in_place_add_and_sub_with_alpha_round_once_on_blas_sizes(dtype, n):
    # from 4096 contiguous elements ``p.add_(g, alpha=-lr)`` goes to BLAS axpy, whose scalar
    # tail (the end of each thread's range) multiplies and adds: a few elements in a
    # thousand an ulp from torch's fused multiply-add (Note [axpy rounds once])
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(dtype)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    for alpha in (-0.0137, 0.37, 3):
        for name in ("add_", "sub_"):
            got = getattr(ember.tensor(y), name)(ember.tensor(x), alpha=alpha)
            want = getattr(torch.tensor(y), name)(torch.tensor(x), alpha=alpha)
            np.testing.assert_array_equal(_np(got), _np(want))


def test_in_place_add_with_alpha_keeps_blas_edge_cases():
    # alpha 0 with an infinite operand is NaN (BLAS would skip it); views and overlaps
    for lib in (ember, torch):
        y = lib.ones(5000)
        x = lib.ones(5000)
        x[3] = float("inf")
        y.add_(x, alpha=0.0)
        assert bool(y[3].isnan()) and float(y[0]) == 1.0
    y, x = np.random.default_rng(0).standard_normal((2, 9000)).astype(np.float32)
    got, want = ember.tensor(y), torch.tensor(y)
    got[::2].add_(ember.tensor(x)[::2], alpha=0.3)
    want[::2].add_(torch.tensor(x)[::2], alpha=0.3)
    np.testing.assert_array_equal(_np(got), _np(want))


def test_scatter_reduce_takes_max_and_min_forward_only_as_torch():
    # torch's CPU kernel reads 'max'/'min' as amax/amin; its backward then refuses them
    idx = [[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]]
    for reduce in ("max", "min"):
        for inc in (True, False):
            got = ember.zeros(3, 5).scatter_reduce(0, ember.tensor(idx),
                                                   ember.arange(1., 11).view(2, 5), reduce,
                                                   include_self=inc)
            want = torch.zeros(3, 5).scatter_reduce(0, torch.tensor(idx),
                                                    torch.arange(1., 11).view(2, 5), reduce,
                                                    include_self=inc)
            np.testing.assert_array_equal(_np(got), _np(want))
    msgs = []
    for lib in (ember, torch):
        s = lib.arange(1., 11).view(2, 5).requires_grad_()
        with pytest.raises(RuntimeError) as e:
            lib.zeros(3, 5).scatter_reduce(0, lib.tensor(idx), s, "max").sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    with pytest.raises(RuntimeError, match="got foo$"):
        ember.zeros(3).scatter_reduce(0, ember.tensor([0]), ember.ones(1), "foo")


def test_unfold_checks_arguments_and_block_counts_as_torch():
    # a kernel larger than the (padded) input raised the convolution's message; zero or
    # negative kernel/dilation/padding/stride named the convolution's checks
    cases = [dict(kernel_size=5), dict(kernel_size=7, stride=2), dict(kernel_size=(2, 6)),
             dict(kernel_size=3, dilation=3, padding=1), dict(kernel_size=0),
             dict(kernel_size=2, stride=0), dict(kernel_size=2, padding=-1),
             dict(kernel_size=2, dilation=0), dict(kernel_size=1, stride=0, padding=-1,
                                                   dilation=0)]
    for shape in ((1, 2, 4, 5), (2, 4, 5), (1, 0, 4, 5)):
        for kw in cases:
            msgs = []
            for lib in (ember, torch):
                with pytest.raises(RuntimeError) as e:
                    lib.nn.functional.unfold(lib.ones(shape), **kw)
                msgs.append(str(e.value))
            assert msgs[0] == msgs[1]
    got = ember.nn.functional.unfold(ember.arange(40.).view(1, 2, 4, 5), 2, padding=1, stride=2)
    want = torch.nn.functional.unfold(torch.arange(40.).view(1, 2, 4, 5), 2, padding=1, stride=2)
    np.testing.assert_array_equal(_np(got), _np(want))


def test_print_opts_reads_and_sets_the_live_options():
    # scripts read torch._tensor_str.PRINT_OPTS.precision (ember had no PRINT_OPTS)
    out = []
    for lib in (ember, torch):
        opts = lib._tensor_str.PRINT_OPTS
        try:
            lib.set_printoptions(precision=2)
            seen = (opts.precision, opts.threshold, opts.linewidth, opts.sci_mode, repr(opts))
            opts.threshold = 3
            text = repr(lib.arange(10))
        finally:
            lib.set_printoptions(profile="default")
        out.append((seen, text, opts.threshold))
    assert out[0] == out[1]


def test_pruning_container_is_iterable_as_torch():
    # hasattr(container, '__iter__') was False (iteration went through __getitem__)
    names = []
    import importlib
    for lib in (ember, torch):
        prune = importlib.import_module(lib.__name__ + ".nn.utils.prune")
        lin = lib.nn.Linear(6, 8)
        prune.l1_unstructured(lin, "weight", amount=0.5)
        prune.ln_structured(lin, "weight", amount=2, n=2, dim=0)
        h = list(lin._forward_pre_hooks.values())[0]
        names.append((type(h).__name__, hasattr(h, "__iter__"), [type(x).__name__ for x in h],
                      len(h)))
    assert names[0] == names[1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_remainder_signs_a_zero_as_the_dividend(dtype):
    # torch's remainder is fmod plus the divisor where the signs differ: -0. % 3 and -6. % 3
    # are -0. (NumPy signs a zero result as the divisor)
    a = [-0., 0., 6., -6., 6., -6., -0., 7.5, -7.5]
    b = [3., 3., -3., 3., 3., -3., -3., 2., 2.]
    for lib_fn in (lambda L, x, y: L.remainder(x, y), lambda L, x, y: x % 3.,
                   lambda L, x, y: x.clone().remainder_(y), lambda L, x, y: L.remainder(-6., y)):
        got = lib_fn(ember, ember.tensor(a).to(getattr(ember, dtype)),
                     ember.tensor(b).to(getattr(ember, dtype)))
        want = lib_fn(torch, torch.tensor(a).to(getattr(torch, dtype)),
                      torch.tensor(b).to(getattr(torch, dtype)))
        g, w = got.float().numpy(), want.float().numpy()
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_promote_types_and_can_cast_take_dtypes_only_as_torch():
    cases = [("can_cast", ("int32", 1)), ("can_cast", (1, "int32")),
             ("promote_types", ("x", "float32")), ("promote_types", ("float32", None)),
             ("promote_types", (np.float32, "int8")), ("promote_types", (float, "int8")),
             ("can_cast", (float, "int8")), ("promote_types", ("half", "bfloat16"))]
    for name, args in cases:
        res = []
        for lib in (ember, torch):
            a = [getattr(lib, x) if isinstance(x, str) and hasattr(lib, x) else x for x in args]
            try:
                r = getattr(lib, name)(*a)
                res.append(str(r).replace("torch.", ""))
            except TypeError as e:
                res.append(str(e))
        assert res[0] == res[1], (name, args)


def test_autocast_parses_the_device_string_first():
    for name in ("foo", "CPU"):
        msgs = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as e:
                with lib.autocast(name):
                    pass
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_encoder_nested_path_checks_the_padding_mask_as_torch():
    # in eval with enable_nested_tensor, torch checks the padding mask's shape before its
    # other fast-path conditions (gradients, an attention mask): its own messages
    cases = [((4, 3), {}), ((4, 7), {}), ((3, 6), {}), ((6,), {}),
             ((4, 3), {"mask": "causal"}), ((4, 3), {"grad": True})]
    for shape, kw in cases:
        msgs = []
        for lib in (ember, torch):
            lib.manual_seed(0)
            enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(
                16, 4, 32, batch_first=True), 2).eval()
            x = lib.randn(4, 6, 16, requires_grad=bool(kw.get("grad")))
            extra = {"mask": lib.zeros(6, 6)} if "mask" in kw else {}
            with pytest.raises((RuntimeError, AssertionError)) as e:
                enc(x, src_key_padding_mask=lib.zeros(shape, dtype=lib.bool), **extra)
            msgs.append((type(e.value).__name__, str(e.value)))
        assert msgs[0] == msgs[1], shape


def test_scheduler_resume_without_initial_lr_message_as_torch():
    msgs = []
    for lib in (ember, torch):
        p = [lib.nn.Parameter(lib.zeros(1))]
        for make in (lambda o: lib.optim.lr_scheduler.StepLR(o, 2, last_epoch=3),
                     lambda o: lib.optim.swa_utils.SWALR(o, swa_lr=0.05, last_epoch=2)):
            with pytest.raises(KeyError) as e:
                make(lib.optim.SGD(p, lr=0.1))
            msgs.append(str(e.value))
    assert msgs[:2] == msgs[2:]


def test_one_dimensional_ffts_refuse_a_negative_length():
    # torch's 1-d transforms refuse n=-1 ('Invalid number of data points'); ffts of sizes
    # (s=[-1]) keep the input's length
    x, c = np.arange(8.), np.arange(5.) + 1j
    for name, arg in (("fft", x), ("ifft", c), ("rfft", x), ("irfft", c), ("hfft", c),
                      ("ihfft", x)):
        msgs = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as e:
                getattr(lib.fft, name)(lib.tensor(arg), n=-1)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    assert ember.fft.irfftn(ember.tensor(c), s=[-1]).shape == \
        torch.fft.irfftn(torch.tensor(c), s=[-1]).shape


def test_unpool_and_transposed_conv_messages_as_torch():
    def run(lib):
        F = lib.nn.functional
        out = []
        t = lib.arange(16.).view(1, 1, 4, 4)
        o, i = F.max_pool2d(t, 2, return_indices=True)
        for size in ((9, 9), [9, 9], lib.Size([9, 9]), (1, 1, 9, 9), [1, 1, 9, 9], 9):
            with pytest.raises((ValueError, TypeError)) as e:
                F.max_unpool2d(o, i, 2, output_size=size)
            out.append(str(e.value))
        w2, w1 = lib.ones(1, 1, 3, 3), lib.ones(1, 1, 3)
        for f in (lambda: F.conv_transpose2d(t, w2, stride=2, output_padding=2),
                  lambda: F.conv_transpose1d(lib.ones(1, 1, 4), w1, stride=2, output_padding=2),
                  lambda: F.conv_transpose2d(t, w2, stride=(2, 3), output_padding=(1, 3),
                                             dilation=2),
                  lambda: F.conv_transpose3d(t[None], lib.ones(1, 1, 3, 3, 3), stride=2,
                                             output_padding=(0, 2, 0)),
                  lambda: F.conv_transpose1d(t[0], w1, stride=2, output_padding=2)):
            with pytest.raises(RuntimeError) as e:
                f()
            out.append(str(e.value))
        return out
    assert run(ember) == run(torch)


def test_stft_and_istft_warn_once_of_a_missing_window():
    import subprocess
    import sys
    code = ("import warnings, {0} as torch\n"
            "x = torch.randn(64)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    s = torch.stft(x, 16, return_complex=True)\n"
            "    torch.stft(x, 16, return_complex=True)\n"
            "    torch.istft(s, 16); torch.istft(s, 16)\n"
            "    try: torch.stft(x, 16)\n"
            "    except RuntimeError: pass\n"
            "    print([str(m.message).split(' (Triggered')[0] for m in w])\n")
    outs = [subprocess.run([sys.executable, "-c", code.format(lib)], capture_output=True,
                           text=True, check=True).stdout for lib in ("ember", "torch")]
    assert outs[0] == outs[1] and outs[0].count("A window was not provided") == 2


def test_index_reduce_beta_and_grid_sample_warnings_name_the_users_line():
    import subprocess
    import sys
    code = ("import warnings, {0} as torch\n"
            "warnings.simplefilter('always')\n"
            "x = torch.zeros(4)\n"
            "for _ in range(2): x.index_reduce(0, torch.tensor([0]), torch.tensor([2.]), 'prod')\n"
            "torch.nn.functional.grid_sample(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 1, 2))\n"
            "torch.nn.functional.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2))\n")
    errs = []
    for lib in ("ember", "torch"):
        err = subprocess.run([sys.executable, "-c", code.format(lib)], capture_output=True,
                             text=True, check=True).stderr
        errs.append([line.split(" (Triggered")[0] for line in err.splitlines()])
    assert errs[0] == errs[1] and len(errs[0]) == 3


@pytest.mark.parametrize("kw", [dict(size=(5, 6)), dict(size=(32, 20)), dict(scale_factor=2),
                                dict(scale_factor=1.7), dict(scale_factor=(0.6, 2.3),
                                                             recompute_scale_factor=True)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_resize_bit_for_bit(kw, align_corners):
    # torch's 2-d bilinear kernel: float32 weights, products of the two axes' weights and a
    # chain of fused multiply-adds (Note [bilinear as torch]); ember interpolated one axis
    # after the other (an ulp off in most elements)
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 12)).astype(np.float32)
    for channels_last in (False, True):
        for grad in (False, True):
            outs = []
            for lib in (ember, torch):
                t = lib.tensor(x)
                if channels_last:
                    t = t.to(memory_format=lib.channels_last)
                t.requires_grad_(grad)
                y = lib.nn.functional.interpolate(t, mode="bilinear",
                                                  align_corners=align_corners, **kw)
                g = lib.autograd.grad(y.pow(2).sum(), t)[0].numpy() if grad else None
                outs.append((y.detach().numpy(), y.stride(), g,
                             y.grad_fn.name() if grad else None))
            (a, sa, ga, na), (b, sb, gb, nb) = outs
            np.testing.assert_array_equal(a, b)
            assert sa == sb and na == nb
            if grad:
                np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-5)
