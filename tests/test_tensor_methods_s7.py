"""Tensor methods torch has that ember lacked (found by comparing dir(torch.Tensor)):
values, warnings and errors against torch."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(expr):
    out = []
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = expr(lib)
                r = r.tolist() if hasattr(r, "tolist") else r
            except Exception as e:              # noqa: BLE001 - compared below
                r = (type(e).__name__, str(e))
        out.append((r, [str(x.message) for x in w if "TypedStorage" not in str(x.message)]))
    return out


CASES = {
    "get_device": lambda lib: lib.ones(2, 3).get_device(),
    "dim_order": lambda lib: [lib.ones(2, 3).dim_order(), lib.ones(2, 3).t().dim_order(),
                              lib.empty(2, 3, 4, 5).to(memory_format=lib.channels_last)
                              .dim_order(), lib.ones(1, 3).dim_order(),
                              lib.ones(3, 1).t().dim_order(), lib.tensor(1.).dim_order()],
    "dim_order ambiguous": lambda lib: lib.ones(2, 1).dim_order(ambiguity_check=True),
    "dim_order formats": lambda lib: lib.empty(2, 3, 4, 5).to(
        memory_format=lib.channels_last).dim_order(
        ambiguity_check=[lib.contiguous_format, lib.channels_last]),
    "resize": lambda lib: lib.arange(6.).resize(2, 3),
    "resize_as": lambda lib: lib.arange(6.).resize_as(lib.zeros(3, 2)),
    "map2_": lambda lib: lib.ones(2, 2).map2_(lib.arange(4.).reshape(2, 2), lib.ones(2) * 3,
                                              lambda a, b, c: a + b * c),
    "map2_ grad": lambda lib: lib.ones(2, requires_grad=True).map2_(
        lib.ones(2), lib.ones(2), lambda a, b, c: a),
    "map2_ dtype": lambda lib: lib.ones(2).int().map2_(lib.ones(2), lib.ones(2),
                                                       lambda a, b, c: a),
    "pin_memory": lambda lib: lib.ones(2).pin_memory(),
    "const_data_ptr": lambda lib: (lambda t: t.const_data_ptr() == t.data_ptr())(lib.ones(3)),
    "module_load": lambda lib: lib.ones(2, 3).module_load(lib.zeros(2, 3)),
    "module_load assign": lambda lib: (lambda o: (o.requires_grad, lib.ones(2).module_load(
        o, assign=True).requires_grad))(lib.zeros(2, requires_grad=True)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_method_as_torch(name):
    got, want = _both(CASES[name])
    assert got == want


def test_orgqr_is_householder_product():
    a = np.random.default_rng(0).standard_normal((5, 3))
    tau = np.random.default_rng(1).standard_normal(3)
    e = ember.tensor(a).orgqr(ember.tensor(tau))
    t = torch.tensor(a).orgqr(torch.tensor(tau))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def _warned(lib, fn):
    import warnings as w
    with w.catch_warnings(record=True) as got:
        w.simplefilter("always")
        fn(lib)
    return [(str(m.message), m.category.__name__) for m in got]


WARNING_CASES = {
    "affine_grid default": lambda lib: lib.nn.functional.affine_grid(
        lib.eye(2, 3).unsqueeze(0), (1, 1, 4, 4)),
    "affine_grid given": lambda lib: lib.nn.functional.affine_grid(
        lib.eye(2, 3).unsqueeze(0), (1, 1, 4, 4), align_corners=False),
    "grid_sample default": lambda lib: lib.nn.functional.grid_sample(
        lib.ones(1, 1, 4, 4), lib.zeros(1, 2, 2, 2), mode="nearest"),
    "grid_sample given": lambda lib: lib.nn.functional.grid_sample(
        lib.ones(1, 1, 4, 4), lib.zeros(1, 2, 2, 2), align_corners=True),
    "upsample": lambda lib: lib.nn.functional.upsample(lib.ones(1, 1, 2, 2), scale_factor=2),
    "upsample_nearest": lambda lib: lib.nn.functional.upsample_nearest(lib.ones(1, 1, 2, 2),
                                                                        scale_factor=2),
    "upsample_bilinear": lambda lib: lib.nn.functional.upsample_bilinear(
        lib.ones(1, 1, 2, 2), scale_factor=2),
    "Upsampling modules": lambda lib: (lib.nn.UpsamplingNearest2d(scale_factor=2)(
        lib.ones(1, 1, 2, 2)), lib.nn.UpsamplingBilinear2d(scale_factor=2)(lib.ones(1, 1, 2, 2))),
}


@pytest.mark.parametrize("name", list(WARNING_CASES))
def test_vision_warnings_as_torch(name):
    assert _warned(ember, WARNING_CASES[name]) == _warned(torch, WARNING_CASES[name])


def test_dataloader_warns_about_more_workers_than_cpus_as_torch():
    import os
    n = len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1) + 1

    def run(lib):
        ds = lib.utils.data.TensorDataset(lib.arange(8.).unsqueeze(1))
        loader = lib.utils.data.DataLoader(ds, batch_size=4, num_workers=n)
        return [b[0].tolist() for b in loader]
    ours, theirs = _warned(ember, run), _warned(torch, run)
    assert len(ours) == 2 and ours == theirs
