"""Runtime behaviour checked against torch (issue 14, part 3): the deterministic-algorithms
table, lazy samplers, corrupt checkpoints."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch oracle")


# ------------------------------------------------------------------ determinism table

def _determinism_cases(T):
    """Every op the nondeterminism table could concern, as a thunk per library ``T``."""
    F = T.nn.functional
    idx = T.tensor([0, 1, 1])

    def leaf(*shape):
        return T.ones(*shape).requires_grad_()

    def bwd(y):
        y.sum().backward()

    def unpool(n):
        x = T.arange(4.0 ** n).reshape((1, 1) + (4,) * n)
        pooled = getattr(F, f"max_pool{n}d")(x, 2, return_indices=True)
        return lambda: getattr(F, f"max_unpool{n}d")(*pooled, 2)

    grid = T.tensor([[[[-0.5, 0.2], [0.3, 0.9]], [[0.1, -0.7], [0.6, 0.0]]]])
    return {
        "scatter_add_": lambda: T.zeros(3).scatter_add_(0, idx, T.ones(3)),
        "scatter_add": lambda: T.zeros(3).scatter_add(0, idx, T.ones(3)),
        "scatter_add backward": lambda: bwd(T.zeros(3).scatter_add(0, idx, leaf(3))),
        "scatter": lambda: T.zeros(3).scatter(0, idx, T.ones(3)),
        "scatter_ reduce=add": lambda: T.zeros(3).scatter_(0, idx, T.ones(3), reduce="add"),
        "scatter_reduce sum": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "sum"),
        "scatter_reduce mean": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "mean"),
        "scatter_reduce prod": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "prod"),
        "scatter_reduce amax": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "amax"),
        "index_add_": lambda: T.zeros(3).index_add_(0, idx, T.ones(3)),
        "index_add": lambda: T.index_add(T.zeros(3), 0, idx, T.ones(3)),
        "index_copy": lambda: T.zeros(3).index_copy(0, idx, T.ones(3)),
        "index_copy_": lambda: T.zeros(3).index_copy_(0, idx, T.ones(3)),
        "index_fill_": lambda: T.zeros(3).index_fill_(0, idx, 1.0),
        "index_put_ accumulate": lambda: T.zeros(3).index_put_((idx,), T.ones(3), True),
        "index_put_": lambda: T.zeros(3).index_put_((idx,), T.ones(3)),
        "getitem backward": lambda: bwd(leaf(3)[idx]),
        "index_select backward": lambda: bwd(T.index_select(leaf(3), 0, idx)),
        "gather backward": lambda: bwd(T.gather(leaf(3), 0, idx)),
        "take backward": lambda: bwd(T.take(leaf(3), idx)),
        "put_ accumulate": lambda: T.zeros(3).put_(idx, T.ones(3), accumulate=True),
        "put_": lambda: T.zeros(3).put_(idx, T.ones(3)),
        "put": lambda: T.zeros(3).put(idx, T.ones(3)),
        "masked_scatter_": lambda: T.zeros(3).masked_scatter_(T.tensor([True, False, True]),
                                                              T.ones(3)),
        "bincount": lambda: T.bincount(idx),
        "bincount weights": lambda: T.bincount(idx, T.ones(3)),
        "histc": lambda: T.histc(T.tensor([1.0, 2.0, 1.0]), bins=4),
        "kthvalue": lambda: T.kthvalue(T.tensor([3.0, 1.0, 2.0]), 2),
        "median": lambda: T.median(T.tensor([3.0, 1.0, 2.0])),
        "median dim": lambda: T.median(T.tensor([[3.0, 1.0, 2.0]]), 1),
        "nanmedian dim": lambda: T.nanmedian(T.tensor([[3.0, 1.0, 2.0]]), 1),
        "mode": lambda: T.mode(T.tensor([1.0, 2.0, 1.0])),
        "cumsum": lambda: T.cumsum(T.ones(3), 0),
        "cumsum backward": lambda: bwd(T.cumsum(leaf(3), 0)),
        "sort": lambda: T.sort(T.tensor([1.0, 2.0, 1.0])),
        "unique": lambda: T.unique(T.tensor([1, 2, 1])),
        "interpolate nearest backward": lambda: bwd(F.interpolate(leaf(1, 1, 4, 4), scale_factor=2)),
        "interpolate linear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4), scale_factor=2, mode="linear")),
        "interpolate bilinear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4, 4), scale_factor=2, mode="bilinear")),
        "interpolate bicubic backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4, 4), scale_factor=2, mode="bicubic")),
        "interpolate trilinear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 2, 2, 2), scale_factor=2, mode="trilinear")),
        "embedding backward": lambda: bwd(F.embedding(idx, leaf(4, 3))),
        "embedding_bag backward": lambda: bwd(F.embedding_bag(idx, leaf(4, 3), T.tensor([0, 2]))),
        "embedding_bag max backward": lambda: bwd(
            F.embedding_bag(idx, leaf(4, 3), T.tensor([0, 2]), mode="max")),
        "ctc_loss backward": lambda: F.ctc_loss(
            leaf(5, 1, 4).log_softmax(2), T.tensor([[1, 2]]), T.tensor([5]),
            T.tensor([2])).backward(),
        "nll_loss backward": lambda: F.nll_loss(leaf(2, 3), T.zeros(2, dtype=T.long)).backward(),
        "nll_loss2d backward": lambda: F.nll_loss(
            leaf(1, 3, 2, 2), T.zeros(1, 2, 2, dtype=T.long)).backward(),
        "adaptive_avg_pool2d backward": lambda: bwd(F.adaptive_avg_pool2d(leaf(1, 1, 5, 5), 3)),
        "adaptive_avg_pool3d backward": lambda: bwd(
            F.adaptive_avg_pool3d(leaf(1, 1, 5, 5, 5), 3)),
        "adaptive_max_pool2d backward": lambda: bwd(F.adaptive_max_pool2d(leaf(1, 1, 5, 5), 3)),
        "avg_pool3d backward": lambda: bwd(F.avg_pool3d(leaf(1, 1, 4, 4, 4), 2)),
        "max_pool1d backward": lambda: bwd(F.max_pool1d(leaf(1, 1, 4), 2)),
        "max_pool2d backward": lambda: bwd(F.max_pool2d(leaf(1, 1, 4, 4), 2)),
        "max_pool3d backward": lambda: bwd(F.max_pool3d(leaf(1, 1, 4, 4, 4), 2)),
        "fractional_max_pool2d backward": lambda: bwd(
            F.fractional_max_pool2d(leaf(1, 1, 5, 5), 2, output_size=3,
                                    _random_samples=T.full((1, 1, 2), 0.5))),
        "max_unpool1d": unpool(1),
        "max_unpool2d": unpool(2),
        "max_unpool3d": unpool(3),
        "reflection_pad backward": lambda: bwd(F.pad(leaf(1, 1, 4, 4), (1, 1, 1, 1), "reflect")),
        "replication_pad backward": lambda: bwd(F.pad(leaf(1, 1, 4, 4), (1, 1, 1, 1), "replicate")),
        "grid_sample backward": lambda: bwd(F.grid_sample(leaf(1, 1, 4, 4), grid,
                                                          align_corners=False)),
        "conv_transpose2d backward": lambda: bwd(F.conv_transpose2d(leaf(1, 1, 3, 3),
                                                                    leaf(1, 1, 2, 2))),
        "empty": lambda: T.empty(3),
        "empty int": lambda: T.empty(3, dtype=T.int32),
        "empty bool": lambda: T.empty(2, dtype=T.bool),
        "empty_like": lambda: T.empty_like(T.ones(2, dtype=T.uint8)),
        "new_empty": lambda: T.ones(3).new_empty(4),
        "empty_strided": lambda: T.empty_strided((2, 2), (2, 1)),
        "resize_": lambda: T.zeros(2).resize_(5),
        "resize_ int": lambda: T.zeros(2, dtype=T.long).resize_(5),
        "resize_as_": lambda: T.zeros(2).resize_as_(T.ones(4)),
    }


def _outcome(T, fn):
    """(what happened, deterministic-alert warnings, result values) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
            what = "ok"
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            result, what = None, type(e).__name__
    alerts = sorted({str(w.message).split(" ")[0] for w in caught
                     if "deterministic implementation" in str(w.message)})
    if isinstance(result, tuple):
        result = result[0]
    values = result.tolist() if hasattr(result, "tolist") else None
    return what, alerts, values


_CASES = sorted(_determinism_cases(ember))


@pytest.mark.parametrize("warn_only", [False, True])
@pytest.mark.parametrize("name", _CASES)
def test_deterministic_algorithms_table_matches_torch(name, warn_only):
    got = {}
    for T in (ember, torch):
        T.manual_seed(0)
        T.use_deterministic_algorithms(True, warn_only=warn_only)
        try:
            got[T.__name__] = _outcome(T, _determinism_cases(T)[name])
        finally:
            T.use_deterministic_algorithms(False)
    e_what, e_alerts, e_vals = got["ember"]
    t_what, t_alerts, t_vals = got["torch"]
    assert (e_what, e_alerts) == (t_what, t_alerts)
    if t_vals is not None:
        np.testing.assert_array_equal(np.asarray(e_vals), np.asarray(t_vals))


def test_deterministic_alert_message_is_torchs():
    msgs = []
    for T in (ember, torch):
        T.use_deterministic_algorithms(True)
        try:
            with pytest.raises(RuntimeError) as e:
                T.zeros(3).put(T.tensor([0]), T.ones(1))
            msgs.append(str(e.value))
        finally:
            T.use_deterministic_algorithms(False)
    assert msgs[0] == msgs[1]


# ------------------------------------------------------------------ samplers

def _stream(T, make, count=None, seed=7):
    """The first ``count`` items of the sampler ``make(T, generator)`` builds, seeded."""
    import itertools
    T.manual_seed(seed)
    g = T.Generator()
    g.manual_seed(seed)
    it = iter(make(T, g))
    items = list(it) if count is None else list(itertools.islice(it, count))
    return [list(b) if isinstance(b, list) else b for b in items]


_SAMPLERS = {
    "random": lambda T, g: T.utils.data.RandomSampler(range(10), generator=g),
    "random default generator": lambda T, g: T.utils.data.RandomSampler(range(10)),
    "random num_samples": lambda T, g: T.utils.data.RandomSampler(range(10), num_samples=23,
                                                                  generator=g),
    "replacement 70": lambda T, g: T.utils.data.RandomSampler(range(9), replacement=True,
                                                              num_samples=70, generator=g),
    "replacement 64": lambda T, g: T.utils.data.RandomSampler(range(9), replacement=True,
                                                              num_samples=64, generator=g),
    "replacement default generator": lambda T, g: T.utils.data.RandomSampler(
        range(5), replacement=True, num_samples=40),
    "subset random": lambda T, g: T.utils.data.SubsetRandomSampler([3, 9, 4, 1, 7], g),
    "weighted": lambda T, g: T.utils.data.WeightedRandomSampler([0.1, 0.5, 2.0, 1.0], 30,
                                                                generator=g),
    "weighted no replacement": lambda T, g: T.utils.data.WeightedRandomSampler(
        [0.1, 0.5, 2.0, 1.0], 3, replacement=False, generator=g),
    "batch": lambda T, g: T.utils.data.BatchSampler(
        T.utils.data.RandomSampler(range(11), generator=g), 4, False),
    "batch drop_last": lambda T, g: T.utils.data.BatchSampler(
        T.utils.data.RandomSampler(range(11), replacement=True, num_samples=50, generator=g),
        4, True),
    "distributed": lambda T, g: T.utils.data.DistributedSampler(range(11), num_replicas=3,
                                                                rank=1, seed=5),
    "distributed drop_last": lambda T, g: T.utils.data.DistributedSampler(
        range(11), num_replicas=3, rank=2, seed=5, drop_last=True),
    "dataloader shuffle": lambda T, g: T.utils.data.DataLoader(range(13), batch_size=5,
                                                               shuffle=True, generator=g),
}


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_seeded_index_streams_equal_torchs(name):
    def plain(items):
        return [b.tolist() if hasattr(b, "tolist") else b for b in items]
    assert plain(_stream(ember, _SAMPLERS[name])) == plain(_stream(torch, _SAMPLERS[name]))


def test_random_split_and_subset_equal_torchs():
    out = []
    for T in (ember, torch):
        g = T.Generator()
        g.manual_seed(11)
        parts = T.utils.data.random_split(range(17), [0.5, 0.3, 0.2], generator=g)
        out.append([list(p.indices) for p in parts] + [[p[i] for i in range(len(p))]
                                                       for p in parts])
    assert out[0] == out[1]


def test_replacement_sampler_is_lazy():
    """minGPT's trainer: num_samples=1e10 must not build the index list up front."""
    import time
    start = time.perf_counter()
    make = lambda T, g: T.utils.data.RandomSampler(range(1000), replacement=True,  # noqa: E731
                                                   num_samples=10 ** 10, generator=g)
    first = _stream(ember, make, count=100)
    assert time.perf_counter() - start < 2.0
    assert first == _stream(torch, make, count=100)
    assert len(make(ember, None)) == 10 ** 10
    sampler = ember.utils.data.BatchSampler(make(ember, None), 64, drop_last=False)
    assert len(next(iter(sampler))) == 64 and len(sampler) == -(-10 ** 10 // 64)
    loader = ember.utils.data.DataLoader(range(1000), batch_size=8,
                                         sampler=make(ember, None))
    assert next(iter(loader)).shape == (8,) and len(loader) == 10 ** 10 // 8


# ------------------------------------------------------------------ corrupt checkpoints

def _checkpoint():
    import io
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3, dtype=torch.int64)},
               buf)
    return buf.getvalue()


def _rezip(good, change):
    """``good`` re-zipped with ``change(name, data)`` applied to each record (None drops it)."""
    import io
    import zipfile
    src, out = zipfile.ZipFile(io.BytesIO(good)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for name in src.namelist():
            data = change(name, src.read(name))
            if data is not None:
                dst.writestr(name, data)
    return out.getvalue()


def _legacy_checkpoint():
    import io
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0)}, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def _when(suffix, value):
    return lambda name, data: (value(data) if callable(value) else value) \
        if name.endswith(suffix) else data


_CORRUPTIONS = {
    "empty file": lambda: b"",
    "cut to 10 bytes": lambda: _checkpoint()[:10],
    "cut in half": lambda: _checkpoint()[:len(_checkpoint()) // 2],
    "last byte missing": lambda: _checkpoint()[:-1],
    "zip magic then garbage": lambda: b"PK\x03\x04" + bytes(range(256)) * 2,
    "plain garbage": lambda: b"hello world, not a checkpoint",
    "missing storage record": lambda: _rezip(_checkpoint(), _when("/data/0", None)),
    "short storage record": lambda: _rezip(_checkpoint(), _when("/data/0", lambda d: d[:8])),
    "long storage record": lambda: _rezip(_checkpoint(), _when("/data/1", lambda d: d + d)),
    "missing data.pkl": lambda: _rezip(_checkpoint(), _when("data.pkl", None)),
    "garbage data.pkl": lambda: _rezip(_checkpoint(), _when("data.pkl", b"garbage!")),
    "truncated data.pkl": lambda: _rezip(_checkpoint(), _when("data.pkl", lambda d: d[:40])),
    "missing version": lambda: _rezip(_checkpoint(), _when("archive/version", None)),
    "version too new": lambda: _rezip(_checkpoint(), _when("archive/version", b"99\n")),
    "version not a number": lambda: _rezip(_checkpoint(), _when("archive/version", b"x\n")),
    "legacy cut in half": lambda: _legacy_checkpoint()[:len(_legacy_checkpoint()) // 2],
    "legacy storage cut": lambda: _legacy_checkpoint()[:-5],
    "legacy count cut": lambda: _legacy_checkpoint()[:-30],
}
# torch's weights-only unpickler leaks its internals here (KeyError / IndexError from a
# bad memo or opcode argument); ember's answers with pickle's UnpicklingError
_TORCH_WEIGHTS_ONLY_QUIRKS = {"plain garbage", "truncated data.pkl"}


def _load_error(T, data, weights_only):
    import io
    try:
        T.load(io.BytesIO(data), weights_only=weights_only)
    except Exception as e:  # noqa: BLE001 - the class and text are what is compared
        return type(e), str(e)
    return None, ""


def _first_sentence(msg):
    import re
    return re.sub(r"^\[enforce fail at [^\]]*\] \. ", "", msg).split(". ")[0]


@pytest.mark.parametrize("weights_only", [False, True])
@pytest.mark.parametrize("name", sorted(_CORRUPTIONS))
def test_corrupt_checkpoint_errors_match_torch(name, weights_only):
    data = _CORRUPTIONS[name]()
    e_cls, e_msg = _load_error(ember, data, weights_only)
    t_cls, t_msg = _load_error(torch, data, weights_only)
    assert t_cls is not None and e_cls is not None
    if weights_only and name in _TORCH_WEIGHTS_ONLY_QUIRKS:
        assert issubclass(e_cls, __import__("pickle").UnpicklingError)
        return
    assert e_cls is t_cls, (e_msg, t_msg)
    if t_cls is RuntimeError:        # the problem is named as torch names it
        assert _first_sentence(e_msg) == _first_sentence(t_msg)


def test_corrupt_storage_bytes_named_not_silently_loaded():
    """A flipped storage byte (zip CRC mismatch): torch loads the garbage; ember refuses with
    a RuntimeError naming the record rather than zipfile's BadZipFile."""
    import io
    good = bytearray(_checkpoint())
    at = bytes(good).index(np.float32(1.0).tobytes())
    good[at:at + 4] = b"\x11\x22\x33\x44"
    with pytest.raises(RuntimeError, match="failed reading file data/0"):
        ember.load(io.BytesIO(bytes(good)))


def test_good_checkpoint_still_loads(tmp_path):
    import io
    got = ember.load(io.BytesIO(_checkpoint()))
    assert got["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and got["b"].tolist() == [1, 1, 1]
    ember.save({"x": ember.ones(2)}, tmp_path / "c.pt")
    assert torch.load(tmp_path / "c.pt")["x"].tolist() == [1, 1]
    assert ember.load(tmp_path / "c.pt")["x"].tolist() == [1, 1]
