"""Regressions found diffing everyday programs (round 10a, session 15: the differences left by
rounds 9a-9c, then torch's argument-parser texts for method calls) run under torch and under
``python -m ember.run``; each error's class and text checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from helpers import assert_same_outcome as _same, outcome as _outcome  # noqa: E402


# ------------------------------------------------------------------ out= with grad

def _tg(lib, *shape, dtype=None):
    return lib.empty(*shape, dtype=dtype, requires_grad=True)


_OUT_GRAD = {
    "mul_input": lambda lib: lib.mul(lib.ones(3, requires_grad=True), 2, out=lib.empty(3)),
    "mul_out": lambda lib: lib.mul(lib.ones(3), lib.ones(3), out=_tg(lib, 3)),
    "add_alpha": lambda lib: lib.add(lib.ones(3), lib.ones(3), alpha=2, out=_tg(lib, 3)),
    "sin_out": lambda lib: lib.sin(lib.ones(3), out=_tg(lib, 3)),
    "resize_first": lambda lib: lib.mul(lib.ones(3), 2, out=_tg(lib, 4)),
    "max_pair": lambda lib: lib.max(lib.ones(1, 3), 1, out=(_tg(lib, 1),
                                                            lib.empty(1, dtype=lib.long))),
    "cat": lambda lib: lib.cat([lib.ones(2)], out=_tg(lib, 2)),
    "sum": lambda lib: lib.sum(lib.ones(2, 2), 0, out=_tg(lib, 2)),
    "matmul": lambda lib: lib.matmul(lib.ones(2, 2), lib.ones(2, 2), out=_tg(lib, 2, 2)),
    "clamp": lambda lib: lib.clamp(lib.ones(2), min=0, out=_tg(lib, 2)),
    "int_inputs": lambda lib: lib.add(lib.ones(2, dtype=lib.long), 1, out=_tg(lib, 2)),
    "zeros": lambda lib: lib.zeros(3, out=_tg(lib, 3)),
    "zeros_resize": lambda lib: lib.zeros(3, out=_tg(lib, 4)),
    "arange": lambda lib: lib.arange(3., out=_tg(lib, 3)),
    "full": lambda lib: lib.full((3,), 2., out=_tg(lib, 3)),
    "linspace": lambda lib: lib.linspace(0, 1, 3, out=_tg(lib, 3)),
    "eye": lambda lib: lib.eye(3, out=_tg(lib, 3, 3)),
    "rand": lambda lib: lib.rand(3, out=_tg(lib, 3)),
    "randn": lambda lib: lib.randn(3, out=_tg(lib, 3)),
    "empty": lambda lib: lib.empty(3, out=_tg(lib, 3)),
    "normal_ff": lambda lib: lib.normal(0., 1., (3,), out=_tg(lib, 3)),
    "normal_tf": lambda lib: lib.normal(lib.zeros(3), 1., out=_tg(lib, 3)),
    "linalg_inv": lambda lib: lib.linalg.inv(lib.eye(2), out=_tg(lib, 2, 2)),
    "view_out": lambda lib: lib.mul(lib.ones(2, requires_grad=True), 2,
                                    out=lib.empty(4)[:2]),
}


@pytest.mark.parametrize("case", sorted(_OUT_GRAD))
def test_out_with_an_argument_requiring_grad_is_refused(case):
    _same(_OUT_GRAD[case])


def test_out_with_grad_is_refused_before_anything_is_written_or_resized():
    for lib in (torch, ember):
        t = lib.ones(4, requires_grad=True)
        with pytest.raises(RuntimeError):
            lib.mul(lib.ones(3), 2, out=t)
        assert tuple(t.shape) == (4,) and t.detach().sum().item() == 4


@pytest.mark.parametrize("case", ["mul_input", "mul_out", "max_pair", "zeros", "randn",
                                  "empty"])
def test_out_with_grad_under_no_grad(case):
    # written under no_grad, but randn/empty resize their output and refuse to resize one
    # that requires grad whatever the grad mode
    def run(lib):
        with lib.no_grad():
            r = _OUT_GRAD[case](lib)
        return tuple(r.shape) if not isinstance(r, tuple) else len(r)
    _same(run, raises=case in ("randn", "empty"))


def test_out_without_grad_goes_through():
    for lib in (torch, ember):
        t = lib.empty(3)
        r = lib.mul(lib.ones(3), 3, out=t)
        assert r is t and t.tolist() == [3., 3., 3.] and not t.requires_grad


# ------------------------------------------------------------------ .data, requires_grad_

def _set_data(lib, x, v):
    x.data = v
    return x.dtype, tuple(x.shape), x.requires_grad


_DATA = {
    "long_on_grad": lambda lib: _set_data(lib, lib.ones(3, requires_grad=True),
                                          lib.ones(3, dtype=lib.long)),
    "bool_on_grad": lambda lib: _set_data(lib, lib.ones(3, requires_grad=True),
                                          lib.ones(3, dtype=lib.bool)),
    "long_on_param": lambda lib: _set_data(lib, lib.nn.Parameter(lib.ones(2)),
                                           lib.ones(2, dtype=lib.long)),
    "long_on_nonleaf": lambda lib: _set_data(lib, lib.ones(2, requires_grad=True) * 2,
                                             lib.ones(2, dtype=lib.long)),
    "list": lambda lib: _set_data(lib, lib.ones(3), [1., 2.]),
    "ndarray": lambda lib: _set_data(lib, lib.ones(3), np.ones(3)),
    "none": lambda lib: _set_data(lib, lib.ones(3), None),
    "int": lambda lib: _set_data(lib, lib.ones(3), 3),
}


@pytest.mark.parametrize("case", sorted(_DATA))
def test_data_assignment_refusals(case):
    _same(_DATA[case])


@pytest.mark.parametrize("case", ["double_on_grad", "long_without_grad", "half_on_grad",
                                  "reshaped"])
def test_data_assignment_that_goes_through(case):
    def fn(lib):
        x = lib.ones(3, requires_grad=case != "long_without_grad")
        v = {"double_on_grad": lib.ones(3, dtype=lib.double),
             "long_without_grad": lib.ones(3, dtype=lib.long),
             "half_on_grad": lib.ones(3, dtype=lib.half),
             "reshaped": lib.ones(2, 2)}[case]
        return str(_set_data(lib, x, v)).replace("ember", "torch")
    _same(fn, raises=False)


def _rg_attr(lib, v):
    t = lib.ones(3)
    t.requires_grad = v
    return t.requires_grad


_REQUIRES_GRAD = {
    "str": lambda lib: lib.ones(3).requires_grad_("no"),
    "int": lambda lib: lib.ones(3).requires_grad_(1),
    "zero": lambda lib: lib.ones(3).requires_grad_(0),
    "none": lambda lib: lib.ones(3).requires_grad_(None),
    "float": lambda lib: lib.ones(3).requires_grad_(1.0),
    "np_bool": lambda lib: lib.ones(3).requires_grad_(np.True_),
    "tensor": lambda lib: lib.ones(3).requires_grad_(lib.tensor(True)),
    "keyword": lambda lib: lib.ones(3).requires_grad_(requires_grad="x"),
    "two": lambda lib: lib.ones(3).requires_grad_(True, True),
    "three": lambda lib: lib.ones(3).requires_grad_(True, True, True),
    "both": lambda lib: lib.ones(3).requires_grad_(True, requires_grad=False),
    "unknown_kw": lambda lib: lib.ones(3).requires_grad_(foo=False),
    "long_str": lambda lib: lib.ones(3, dtype=lib.long).requires_grad_("x"),
    "attr_str": lambda lib: _rg_attr(lib, "yes"),
    "attr_int": lambda lib: _rg_attr(lib, 1),
    "attr_none": lambda lib: _rg_attr(lib, None),
    "attr_np": lambda lib: _rg_attr(lib, np.True_),
    "attr_long": lambda lib: setattr(lib.ones(3, dtype=lib.long), "requires_grad", "x"),
    "param_int": lambda lib: lib.nn.Parameter(lib.ones(2), 1),
    "param_kw_np": lambda lib: lib.nn.Parameter(lib.ones(2), requires_grad=np.True_),
}


@pytest.mark.parametrize("case", sorted(_REQUIRES_GRAD))
def test_requires_grad_takes_a_bool_only(case):
    _same(_REQUIRES_GRAD[case])


def test_requires_grad_bool_calls_go_through():
    for lib in (torch, ember):
        assert lib.ones(3).requires_grad_().requires_grad
        assert not lib.ones(3).requires_grad_(requires_grad=False).requires_grad
        assert lib.nn.Parameter(lib.ones(2), False).requires_grad is False
        assert _rg_attr(lib, True) is True


# ------------------------------------------------------------------ clamp_, index_put_, cross

_CLAMP = {
    "long": lambda lib: lib.arange(5).clamp_(0.5, 2.5),
    "long_min": lambda lib: lib.arange(5).clamp_(min=0.5),
    "long_max": lambda lib: lib.arange(5).clamp_(max=2.5),
    "int32": lambda lib: lib.arange(5, dtype=lib.int32).clamp_(0.5),
    "uint8": lambda lib: lib.arange(5, dtype=lib.uint8).clamp_(0.5),
    "bool": lambda lib: lib.ones(5, dtype=lib.bool).clamp_(0.5),
    "int16": lambda lib: lib.arange(5, dtype=lib.int16).clamp_(max=1.5),
    "int8": lambda lib: lib.arange(5, dtype=lib.int8).clamp_(max=1.5),
    "clamp_min_": lambda lib: lib.arange(5).clamp_min_(0.5),
    "clamp_max_": lambda lib: lib.arange(5).clamp_max_(0.5),
    "clip_": lambda lib: lib.arange(5).clip_(0.5, 2),
    "tensor_and_number": lambda lib: lib.ones(2, dtype=lib.long).clamp_(lib.tensor(1), 2.5),
    "tensor_bound": lambda lib: lib.arange(5).clamp_(lib.tensor(0.5)),
    "add_": lambda lib: lib.arange(5).add_(0.5),
    "out_long": lambda lib: lib.clamp(lib.arange(5.), 0.5, out=lib.empty(5, dtype=lib.long)),
    "out_double": lambda lib: lib.clamp(lib.ones(2), 0.5, out=lib.empty(2, dtype=lib.double)),
    "out_int32_of_long": lambda lib: lib.clamp(lib.ones(2, dtype=lib.long), 1,
                                               out=lib.empty(2, dtype=lib.int32)),
    "clamp_min_out": lambda lib: lib.clamp_min(lib.ones(2), 0.5,
                                               out=lib.empty(2, dtype=lib.double)),
    "clamp_max_out": lambda lib: lib.clamp_max(lib.ones(2), 0.5,
                                               out=lib.empty(2, dtype=lib.double)),
    "tensor_bound_out": lambda lib: lib.clamp(lib.ones(2), lib.tensor(0.5),
                                              out=lib.empty(2, dtype=lib.long)),
}


@pytest.mark.parametrize("case", sorted(_CLAMP))
def test_clamp_with_number_bounds_as_torch(case):
    _same(_CLAMP[case])


def test_clamp_out_of_a_wider_tensor_bound_goes_through():
    for lib in (torch, ember):
        r = lib.clamp(lib.ones(2), lib.tensor(0.5), out=lib.empty(2, dtype=lib.double))
        assert r.dtype == lib.double and r.tolist() == [1., 1.]


_INDEX_PUT = {
    "1d": lambda lib: lib.zeros(5).index_put_((lib.tensor([0, 1]),), lib.ones(3)),
    "2d": lambda lib: lib.zeros(5, 2).index_put_((lib.tensor([0, 1]),), lib.ones(3)),
    "2d_value": lambda lib: lib.zeros(5, 2).index_put_((lib.tensor([0, 1]),), lib.ones(2, 3)),
    "accumulate": lambda lib: lib.zeros(5).index_put_((lib.tensor([0, 1]),), lib.ones(3),
                                                      accumulate=True),
    "mask": lambda lib: lib.zeros(5).index_put_(
        (lib.tensor([True, False, True, False, False]),), lib.ones(3)),
    "two_indices": lambda lib: lib.zeros(5, 4).index_put_(
        (lib.tensor([0, 1]), lib.tensor([1, 2])), lib.ones(3)),
    "out_of_place": lambda lib: lib.zeros(5).index_put((lib.tensor([0, 1]),), lib.ones(3)),
}


@pytest.mark.parametrize("case", sorted(_INDEX_PUT))
def test_index_put_of_a_wrong_size_value(case):
    _same(_INDEX_PUT[case])


@pytest.mark.parametrize("dim", [None, -1, 1, 0, -2])
def test_linalg_cross_prints_the_dim_as_given(dim):
    kw = {} if dim is None else {"dim": dim}
    _same(lambda lib: lib.linalg.cross(lib.ones(2, 2), lib.ones(2, 2), **kw))
    _same(lambda lib: lib.ones(2, 4).cross(lib.ones(2, 4), -1))


# ------------------------------------------------------------------ saved views modified

_VIEWS = {
    "select": lambda w: w[0], "slice": lambda w: w[1:3], "select1": lambda w: w[:, 1],
    "t": lambda w: w.t(), "transpose": lambda w: w.transpose(0, 1),
    "view": lambda w: w.view(16), "reshape": lambda w: w.reshape(16),
    "unsqueeze": lambda w: w.unsqueeze(0), "expand": lambda w: w.expand(2, 4, 4),
    "narrow": lambda w: w.narrow(0, 1, 2), "diagonal": lambda w: w.diagonal(),
    "permute": lambda w: w.permute(1, 0), "as_strided": lambda w: w.as_strided((2, 2), (1, 2)),
    "unfold": lambda w: w.unfold(0, 2, 1), "mT": lambda w: w.mT,
    "select_slice": lambda w: w[0][1:], "movedim": lambda w: w.movedim(0, 1),
    "unbind": lambda w: w.unbind(0)[1], "split": lambda w: w.split(2)[1],
    "chunk": lambda w: w.chunk(2)[0], "detach": lambda w: w.detach(),
}


@pytest.mark.parametrize("case", sorted(_VIEWS))
def test_saved_view_of_a_modified_leaf_names_as_strided(case):
    def fn(lib):
        lib.manual_seed(0)
        w = lib.randn(4, 4, requires_grad=True)
        v = _VIEWS[case](w)
        y = (v * v).sum()
        with lib.no_grad():
            w.add_(1)
        y.backward()
    _same(fn)


def test_saved_view_of_a_nonleaf_modified_in_place():
    def fn(lib):
        a = lib.ones(4, 4, requires_grad=True)
        b = a * 2
        v = b[0]
        y = (v * v).sum()
        b.add_(1)
        y.backward()
    _same(fn)


# ------------------------------------------------------------------ packed LSTM hx

def _packed(lib, enforce_sorted=True):
    x = lib.arange(60.).reshape(3, 5, 4) / 60
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    return lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor(lengths), batch_first=True,
                                                 enforce_sorted=enforce_sorted)


def _lstm_case(L, bi, hx, sorted_=True, proj=0, bias=True):
    def fn(lib):
        lib.manual_seed(0)
        m = lib.nn.LSTM(4, 6, num_layers=L, batch_first=True, bidirectional=bi,
                        proj_size=proj, bias=bias)
        out, (h, c) = m(_packed(lib, sorted_), hx(lib))
        return tuple(h.shape), tuple(c.shape)
    return fn


_LSTM_HX = {
    "hidden": (1, False, lambda lib: (lib.zeros(1, 3, 5), lib.zeros(1, 3, 5))),
    "hidden_batch": (2, False, lambda lib: (lib.zeros(2, 2, 5), lib.zeros(2, 2, 5))),
    "batch": (2, True, lambda lib: (lib.zeros(4, 2, 6), lib.zeros(4, 2, 6))),
    "batch4": (1, False, lambda lib: (lib.zeros(1, 4, 6), lib.zeros(1, 4, 6))),
    "cell_batch": (1, False, lambda lib: (lib.zeros(1, 3, 6), lib.zeros(1, 2, 6))),
    "layers": (2, False, lambda lib: (lib.zeros(1, 3, 6), lib.zeros(2, 3, 6))),
    "layers_bi_odd": (2, True, lambda lib: (lib.zeros(1, 3, 6), lib.zeros(4, 3, 6))),
    "layers_bi_even": (2, True, lambda lib: (lib.zeros(6, 3, 6), lib.zeros(6, 3, 6))),
    "more_layers": (1, False, lambda lib: (lib.zeros(2, 3, 6), lib.zeros(2, 3, 6))),
    "2d": (1, False, lambda lib: (lib.zeros(3, 6), lib.zeros(3, 6))),
    "cell_size": (1, True, lambda lib: (lib.zeros(2, 3, 6), lib.zeros(2, 3, 5))),
    "three": (1, False, lambda lib: (lib.zeros(1, 3, 6),) * 3),
    "one": (1, False, lambda lib: (lib.zeros(1, 3, 6),)),
    "dtype": (1, False, lambda lib: (lib.zeros(1, 3, 6, dtype=lib.double), lib.zeros(1, 3, 6))),
    "tensor": (2, True, lambda lib: lib.zeros(4, 3, 6)),
}


@pytest.mark.parametrize("case", sorted(_LSTM_HX))
def test_packed_lstm_hx_errors_are_torch_kernels(case):
    L, bi, hx = _LSTM_HX[case]
    _same(_lstm_case(L, bi, hx))


@pytest.mark.parametrize("case", ["hidden", "batch2", "proj_hidden", "proj_cell"])
def test_packed_lstm_hx_errors_unsorted_and_projected(case):
    z = lambda lib, *s: lib.zeros(*s)   # noqa: E731
    fn = {"hidden": _lstm_case(1, False, lambda lib: (z(lib, 1, 3, 5), z(lib, 1, 3, 5)), False),
          "batch2": _lstm_case(1, False, lambda lib: (z(lib, 1, 2, 6), z(lib, 1, 2, 6)), False),
          "proj_hidden": _lstm_case(1, False, lambda lib: (z(lib, 1, 3, 6), z(lib, 1, 3, 6)),
                                    False, proj=3),
          "proj_cell": _lstm_case(1, False, lambda lib: (z(lib, 1, 3, 3), z(lib, 1, 3, 3)),
                                  False, proj=3)}[case]
    _same(fn)


@pytest.mark.parametrize("case", ["sorted", "unsorted_batch4", "list", "proj"])
def test_packed_lstm_good_hx_goes_through(case):
    z = lambda lib, *s: lib.zeros(*s)   # noqa: E731
    fn = {"sorted": _lstm_case(2, True, lambda lib: (z(lib, 4, 3, 6), z(lib, 4, 3, 6))),
          "unsorted_batch4": _lstm_case(1, False, lambda lib: (z(lib, 1, 4, 6), z(lib, 1, 4, 6)),
                                        False),
          "list": _lstm_case(1, False, lambda lib: [z(lib, 1, 3, 6), z(lib, 1, 3, 6)]),
          "proj": _lstm_case(1, False, lambda lib: (z(lib, 1, 3, 3), z(lib, 1, 3, 6)), False,
                             proj=3)}[case]
    _same(fn, raises=False)


@pytest.mark.parametrize("cls", ["GRU", "RNN"])
def test_packed_gru_rnn_given_a_tuple(cls):
    def fn(lib):
        m = getattr(lib.nn, cls)(4, 6, batch_first=True)
        return m(_packed(lib), (lib.zeros(1, 3, 6), lib.zeros(1, 3, 6)))
    _same(fn)


# ------------------------------------------------------------------ argument-parser texts

def _x(lib):
    return lib.arange(12.).reshape(3, 4)


_PARSER = {
    # overloaded methods list their method forms
    "sum_str": lambda lib: _x(lib).sum("a"),
    "sum_float": lambda lib: _x(lib).sum(1.5),
    "sum_kw": lambda lib: _x(lib).sum(dim="a"),
    "sum_list_float": lambda lib: _x(lib).sum([1.5]),
    "mean_float": lambda lib: _x(lib).mean(1.5),
    "min_float": lambda lib: _x(lib).min(1.5),
    "min_list": lambda lib: _x(lib).min([1]),
    "min_kw": lambda lib: _x(lib).min(dim=1.5),
    "max_str": lambda lib: _x(lib).max("a"),
    "prod_float": lambda lib: _x(lib).prod(1.5),
    "prod_kw": lambda lib: _x(lib).prod(dim=1.5),
    "std_str": lambda lib: _x(lib).std("a"),
    "std_kw": lambda lib: _x(lib).std(dim="a"),
    "std_two": lambda lib: _x(lib).std(1.5, True),
    "var_str": lambda lib: _x(lib).var("a"),
    "view_str": lambda lib: _x(lib).view("a"),
    "view_float": lambda lib: _x(lib).view(2.5),
    "view_none": lambda lib: _x(lib).view(None),
    "view_list_float": lambda lib: _x(lib).view([1.5]),
    "view_list_later_float": lambda lib: _x(lib).view([3, 4.0]),
    "view_empty": lambda lib: _x(lib).view(),
    "squeeze_str": lambda lib: _x(lib).squeeze("a"),
    "squeeze_float": lambda lib: _x(lib).squeeze(1.5),
    "all_float": lambda lib: _x(lib).all(1.5),
    "any_str": lambda lib: _x(lib).any("a"),
    "count_nonzero_str": lambda lib: _x(lib).count_nonzero("a"),
    "narrow_str": lambda lib: _x(lib).narrow(0, "a", 1),
    "clamp_str": lambda lib: _x(lib).clamp("a"),
    "clamp_list": lambda lib: _x(lib).clamp([1]),
    "clamp_kw": lambda lib: _x(lib).clamp(min="a"),
    "clamp_two": lambda lib: _x(lib).clamp(None, "a"),
    "pow_str": lambda lib: _x(lib).pow("a"),
    "pow_none": lambda lib: _x(lib).pow(None),
    "masked_fill_str": lambda lib: _x(lib).masked_fill(_x(lib) > 5, "a"),
    "masked_fill_list": lambda lib: _x(lib).masked_fill(_x(lib) > 5, [1]),
    # functions list the function forms
    "f_sum_str": lambda lib: lib.sum(_x(lib), "a"),
    "f_mean_str": lambda lib: lib.mean(_x(lib), "a"),
    "f_min_float": lambda lib: lib.min(_x(lib), 1.5),
    "f_min_kw": lambda lib: lib.min(_x(lib), dim=1.5),
    "f_max_str": lambda lib: lib.max(_x(lib), "a"),
    "f_std_str": lambda lib: lib.std(_x(lib), "a"),
    "f_std_kw": lambda lib: lib.std(_x(lib), dim="a"),
    "f_var_float": lambda lib: lib.var(_x(lib), 1.5),
    "f_squeeze_str": lambda lib: lib.squeeze(_x(lib), "a"),
    "f_narrow_str": lambda lib: lib.narrow(_x(lib), 0, "a", 1),
    "f_clamp_str": lambda lib: lib.clamp(_x(lib), "a"),
    "f_pow_str": lambda lib: lib.pow(_x(lib), "a"),
    "f_masked_fill_str": lambda lib: lib.masked_fill(_x(lib), _x(lib) > 1, "a"),
    "f_all_float": lambda lib: lib.all(_x(lib), 1.5),
    "f_count_nonzero_str": lambda lib: lib.count_nonzero(_x(lib), "a"),
    # one plausible overload: the argument that failed, with its position
    "sum_keepdim": lambda lib: _x(lib).sum(0, "a"),
    "sum_none_keepdim": lambda lib: _x(lib).sum(None, "a"),
    "f_sum_keepdim": lambda lib: lib.sum(_x(lib), 0, "a"),
    "cumsum_float": lambda lib: _x(lib).cumsum(1.5),
    "f_cumsum_float": lambda lib: lib.cumsum(_x(lib), 1.5),
    "softmax_float": lambda lib: _x(lib).softmax(1.5),
    "f_softmax_float": lambda lib: lib.softmax(_x(lib), 1.5),
    "unsqueeze_float": lambda lib: _x(lib).unsqueeze(1.5),
    "transpose_float": lambda lib: _x(lib).transpose(0, 1.5),
    "f_transpose_float": lambda lib: lib.transpose(_x(lib), 0, 1.5),
    "topk_float": lambda lib: _x(lib).topk(1.5),
    "topk_dim_str": lambda lib: _x(lib).topk(2, "a"),
    "flatten_str": lambda lib: _x(lib).flatten("a"),
    "flatten_end_str": lambda lib: _x(lib).flatten(0, "a"),
    "argmax_str": lambda lib: _x(lib).argmax("a"),
    "amax_str": lambda lib: _x(lib).amax("a"),
    "logsumexp_str": lambda lib: _x(lib).logsumexp("a"),
    "index_select_float": lambda lib: _x(lib).index_select(0.5, lib.tensor([0])),
    "roll_str": lambda lib: _x(lib).roll("a"),
    "diff_str": lambda lib: _x(lib).diff("a"),
    "kthvalue_str": lambda lib: _x(lib).kthvalue("a"),
    "mode_str": lambda lib: _x(lib).mode("a"),
    "nansum_str": lambda lib: _x(lib).nansum("a"),
    "median_str": lambda lib: _x(lib).median("a"),
    "median_float": lambda lib: _x(lib).median(1.5),
    "f_median_str": lambda lib: lib.median(_x(lib), "a"),
    "nanmedian_str": lambda lib: _x(lib).nanmedian("a"),
    "expand_float": lambda lib: _x(lib).expand(2.5),
    "expand_str": lambda lib: _x(lib).expand("a"),
    "expand_later_str": lambda lib: _x(lib).expand(3, "a"),
    "repeat_float": lambda lib: _x(lib).repeat(2.5),
    "flip_str": lambda lib: _x(lib).flip("a"),
    "min_keepdim": lambda lib: _x(lib).min(1, "a"),
    "max_keepdim": lambda lib: _x(lib).max(1, 2),
    # varargs given nothing
    "permute_empty": lambda lib: _x(lib).permute(),
    "repeat_empty": lambda lib: _x(lib).repeat(),
    "reshape_empty": lambda lib: _x(lib).reshape(),
}


@pytest.mark.parametrize("case", sorted(_PARSER))
def test_argument_parser_texts_of_methods_and_functions(case):
    _same(_PARSER[case])


def test_parser_texts_keep_python_operators_and_good_calls():
    for lib in (torch, ember):
        x = _x(lib)
        with pytest.raises(TypeError, match="unsupported operand"):
            x ** "a"
        assert x.sum(0).tolist() == [12., 15., 18., 21.]
        assert x.view(4, 3).shape == (4, 3) and x.view([2, 6]).shape == (2, 6)
        assert x.permute(1, 0).shape == (4, 3) and x.sum(()).item() == 66.
        assert x.min(1).values.tolist() == [0., 4., 8.]
        assert x.std(1, True).shape == (3,) and x.median(0).values.tolist() == [4., 5., 6., 7.]
        assert x.clamp(None, 3.).max().item() == 3. and x.pow(2).sum().item() == 506.


_PARSER_MORE = {
    "cat_dim_str": lambda lib: lib.cat([_x(lib), _x(lib)], "a"),
    "cat_dim_kw": lambda lib: lib.cat([_x(lib), _x(lib)], dim=1.5),
    "stack_dim_str": lambda lib: lib.stack([_x(lib), _x(lib)], "a"),
    "chunk_str": lambda lib: _x(lib).chunk("a"),
    "chunk_dim_float": lambda lib: _x(lib).chunk(2, 1.5),
    "f_chunk_str": lambda lib: lib.chunk(_x(lib), "a"),
    "unbind_str": lambda lib: _x(lib).unbind("a"),
    "size_str": lambda lib: _x(lib).size("a"),
    "size_kw": lambda lib: _x(lib).size(dim="a"),
    "stride_float": lambda lib: _x(lib).stride(1.5),
    "type_as_str": lambda lib: _x(lib).type_as("a"),
    "view_as_str": lambda lib: _x(lib).view_as("a"),
    "expand_as_list": lambda lib: _x(lib).expand_as([1]),
    "reshape_as_int": lambda lib: _x(lib).reshape_as(2),
    "prod_keepdim": lambda lib: _x(lib).prod(0, "a"),
    "median_keepdim": lambda lib: _x(lib).median(0, "a"),
    "clamp__str": lambda lib: _x(lib).clamp_("a"),
    "clamp_min__str": lambda lib: _x(lib).clamp_min_("a"),
    "clamp_max_str": lambda lib: _x(lib).clamp_max("a"),
    "pow__list": lambda lib: _x(lib).pow_([1]),
}


@pytest.mark.parametrize("case", sorted(_PARSER_MORE))
def test_argument_parser_texts_of_hand_written_fronts(case):
    _same(_PARSER_MORE[case])


def test_real_of_a_real_tensor_is_itself():
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        assert w.real is w
        c = lib.ones(3, dtype=lib.cfloat)
        assert c.real is not c and c.real.dtype == lib.float32


def test_saved_real_of_a_leaf_modified_in_place():
    def fn(lib):
        w = lib.ones(4, 4, requires_grad=True)
        y = (w.real * w.real).sum()
        with lib.no_grad():
            w.add_(1)
        y.backward()
    _same(fn)


# ------------------------------------------------------------------ MaskedTensor gradients

def _masked_grads(lib):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from importlib import import_module
        masked_tensor = import_module(lib.__name__ + ".masked").masked_tensor

        class ToMasked(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return masked_tensor(g, lib.tensor([False, True]))

        out = []
        x = lib.ones(2, requires_grad=True)
        for _ in range(2):                  # the first kept as it flowed, then accumulated
            ToMasked.apply(x * 2).sum().backward()
            out.append((type(x.grad).__name__, x.grad.get_mask().tolist(),
                        x.grad.get_data()[1].item()))
        x2 = lib.ones(2, requires_grad=True)
        g, = lib.autograd.grad(ToMasked.apply(x2 * 3).sum(), x2)
        out.append((type(g).__name__, g.get_mask().tolist(), g.get_data()[1].item()))
        return out


def test_a_masked_gradient_reaching_a_plain_leaf_is_its_grad():
    assert _masked_grads(ember) == _masked_grads(torch)


@pytest.mark.parametrize("case", ["zeros_int", "ones_none", "full_str", "empty_int", "zeros_np"])
def test_factory_requires_grad_must_be_a_bool(case):
    fn = {"zeros_int": lambda lib: lib.zeros(2, requires_grad=1),
          "ones_none": lambda lib: tuple(lib.ones(2, requires_grad=None).shape),
          "full_str": lambda lib: lib.full((2,), 1., requires_grad="a"),
          "empty_int": lambda lib: lib.empty(2, requires_grad=1),
          "zeros_np": lambda lib: lib.zeros(2, requires_grad=np.True_)}[case]
    _same(fn, raises=case != "ones_none")


@pytest.mark.parametrize("case", ["select", "t", "view", "slice_of_select", "unmodified"])
def test_view_grad_fn_after_its_leaf_is_modified_under_no_grad(case):
    def fn(lib):
        w = lib.ones(4, 4, requires_grad=True)
        v = {"select": lambda: w[0], "t": lambda: w.t(), "view": lambda: w.view(16),
             "slice_of_select": lambda: w[0][1:], "unmodified": lambda: w[0]}[case]()
        first = type(v.grad_fn).__name__
        if case != "unmodified":
            with lib.no_grad():
                w.mul_(2)
        fn1 = v.grad_fn
        again = v.grad_fn is fn1            # regenerated once, then kept
        (v * v).sum().backward()
        return first, type(fn1).__name__, again, w.grad.sum().item()
    _same(fn, raises=False)


_CONVERSION = {
    "float_one": lambda lib: lib.ones(2).float(1),
    "float_two": lambda lib: lib.ones(2).float(1, 2),
    "long_str": lambda lib: lib.ones(2).long("a"),
    "int_memory_format": lambda lib: lib.ones(2).int(memory_format=1),
    "to_index": lambda lib: lib.ones(2).to(0),
    "to_index_dtype": lambda lib: lib.ones(2).to(1, lib.float64),
    "to_two_tensors": lambda lib: lib.ones(2).to(lib.ones(2), lib.ones(2)),
    "to_tensor_dtype": lambda lib: lib.ones(2).to(lib.ones(1, dtype=lib.int64), lib.float64),
    "type_int": lambda lib: lib.ones(2).type(5),
    "type_python_int": lambda lib: lib.ones(2).type(int),
}


@pytest.mark.parametrize("case", sorted(_CONVERSION))
def test_conversion_argument_errors(case):
    _same(_CONVERSION[case])


def test_conversions_that_go_through():
    for lib in (torch, ember):
        x = lib.ones(2)
        assert x.float(memory_format=lib.contiguous_format).dtype == lib.float32
        assert x.int(memory_format=lib.preserve_format).dtype == lib.int32
        assert x.to(lib.ones(1), True).dtype == lib.float32
        assert x.to("cpu", lib.int64).dtype == lib.int64 and x.type(None) == "torch.FloatTensor"


@pytest.mark.parametrize("case", ["argmax", "eq", "lt", "nonzero", "searchsorted", "any",
                                  "signbit", "argmin", "histc", "hash_tensor"])
def test_out_of_an_op_without_derivative_goes_through_under_grad(case):
    def fn(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        long, boolean = lib.empty(0, dtype=lib.long), lib.empty(0, dtype=lib.bool)
        r = {"argmax": lambda: lib.argmax(x, out=long),
             "eq": lambda: lib.eq(x, 1, out=boolean),
             "lt": lambda: lib.lt(x, x, out=boolean),
             "nonzero": lambda: lib.nonzero(x, out=long),
             "searchsorted": lambda: lib.searchsorted(x.detach(), x, out=long),
             "any": lambda: lib.any(x, out=boolean),
             "signbit": lambda: lib.signbit(x, out=boolean),
             "argmin": lambda: lib.argmin(x, 0, out=long),
             "histc": lambda: lib.histc(x, bins=4, out=lib.empty(4)),
             "hash_tensor": lambda: lib.hash_tensor(x, out=lib.empty(0, dtype=lib.uint64)),
             }[case]()
        return r.tolist() if case != "hash_tensor" else r.dtype == lib.uint64
    _same(fn, raises=False)
