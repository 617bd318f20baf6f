"""ember.utils.data vs torch.utils.data: datasets, samplers, collate, DataLoader, workers."""
import collections
import time

import numpy as np
import pytest
import torch
import torch.utils.data as td

import ember
import ember.utils.data as ed


def _tl(x):
    """Nested structure of tensors -> plain lists (ember or torch)."""
    if hasattr(x, "tolist") and not isinstance(x, np.ndarray):
        return ("T", str(x.dtype), x.tolist())
    if isinstance(x, dict):
        return {k: _tl(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x).__name__, [_tl(v) for v in x]
    return x


def _both(fn):
    torch.manual_seed(0)
    ember.manual_seed(0)
    return fn(ember, ed), fn(torch, td)


def test_attribute_access():
    assert ember.utils.data.DataLoader is ed.DataLoader


# ---------------------------------------------------------------- datasets
def test_datasets_match_torch():
    def f(m, d):
        ds = d.TensorDataset(m.arange(6.), m.arange(6))
        cat = d.ConcatDataset([ds, ds])
        sub = d.Subset(ds, [4, 1])
        st = d.StackDataset(a=ds, b=ds)
        parts = d.random_split(range(10), [0.5, 0.3, 0.2], generator=m.Generator().manual_seed(1))
        parts2 = d.random_split(range(10), [3, 7], generator=m.Generator().manual_seed(2))
        return (_tl(ds[2]), len(cat), _tl(cat[-1]), _tl(cat[7]), _tl(sub[0]), len(sub),
                _tl(st[1]), [list(p) for p in parts], [list(p) for p in parts2], len(ds + ds))
    assert f(ember, ed) == f(torch, td)


def test_dataset_errors():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        ed.TensorDataset(ember.ones(2), ember.ones(3))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        ed.random_split(range(5), [2, 2])
    with pytest.raises(ValueError, match="absolute value of index"):
        ed.ConcatDataset([[1, 2]])[-3]
    with pytest.raises(NotImplementedError):
        ed.Dataset()[0]


class Squares(ed.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = ed.get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter([i * i for i in range(lo, self.n, step)])

    def __len__(self):
        return self.n


def test_chain_dataset():
    c = ed.ChainDataset([Squares(3), Squares(2)])
    assert list(c) == [0, 1, 4, 0, 1] and len(c) == 5


# ---------------------------------------------------------------- samplers
def test_samplers_match_torch():
    def f(m, d):
        g = lambda s: m.Generator().manual_seed(s)  # noqa: E731
        m.manual_seed(11)
        return (list(d.SequentialSampler(range(4))),
                list(d.RandomSampler(range(7), generator=g(3))),
                list(d.RandomSampler(range(5), replacement=True, num_samples=40, generator=g(4))),
                list(d.RandomSampler(range(5), num_samples=12, generator=g(5))),
                list(d.SubsetRandomSampler([10, 20, 30, 40], generator=g(6))),
                list(d.BatchSampler(range(7), 3, False)), list(d.BatchSampler(range(7), 3, True)),
                len(d.BatchSampler(range(7), 3, False)), len(d.BatchSampler(range(7), 3, True)),
                list(d.RandomSampler(range(6))),
                [list(d.DistributedSampler(range(10), num_replicas=3, rank=r, seed=1))
                 for r in range(3)],
                [list(d.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False,
                                           drop_last=True)) for r in range(3)])
    assert f(ember, ed) == f(torch, td)


def test_weighted_sampler_deterministic():
    w = [0.1, 0.0, 0.9, 0.5]
    a = list(ed.WeightedRandomSampler(w, 20, generator=ember.Generator().manual_seed(0)))
    b = list(ed.WeightedRandomSampler(w, 20, generator=ember.Generator().manual_seed(0)))
    assert a == b and 1 not in a and len(a) == 20
    c = list(ed.WeightedRandomSampler(w, 3, replacement=False,
                                      generator=ember.Generator().manual_seed(0)))
    assert len(set(c)) == 3 and 1 not in c


def test_distributed_sampler_epoch():
    s = ed.DistributedSampler(range(8), num_replicas=2, rank=0, seed=0)
    e0 = list(s)
    s.set_epoch(1)
    assert list(s) != e0 and len(s) == 4
    with pytest.raises(ValueError, match="Invalid rank 2"):
        ed.DistributedSampler(range(8), num_replicas=2, rank=2)


def test_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        ed.BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        ed.BatchSampler(range(3), 1, 0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        ed.RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        ed.RandomSampler(range(3), num_samples=0)


# ---------------------------------------------------------------- collate
Pt = collections.namedtuple("Pt", "x y")


def test_default_collate_nested_matches_torch():
    def f(m, d):
        batch = [{"t": m.ones(2) * i, "n": np.full(3, i, np.float32), "i": i, "f": i / 2,
                  "s": f"s{i}", "tup": (i, m.zeros(1)), "lst": [i, [i + 1.5]],
                  "pt": Pt(i, np.float64(i)), "b": True, "npi": np.int64(i)}
                 for i in range(3)]
        out = d.default_collate(batch)
        conv = d.default_convert({"a": np.arange(2), "b": (np.zeros(1), 1)})
        return _tl(out), type(out["pt"]).__name__, _tl(conv)
    assert f(ember, ed) == f(torch, td)


def test_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        ed.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        ed.default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        ed.default_collate([np.array(["a"]), np.array(["b"])])


# ---------------------------------------------------------------- DataLoader (main process)
def test_dataloader_batches_match_torch():
    def f(m, d):
        ds = d.TensorDataset(m.arange(10.).reshape(5, 2), m.arange(5))
        out = []
        for kw in ({}, {"batch_size": 2}, {"batch_size": 2, "drop_last": True},
                   {"batch_size": None}, {"batch_size": 3, "shuffle": True},
                   {"batch_sampler": d.BatchSampler(range(5), 2, False)}):
            dl = d.DataLoader(ds, **kw)
            out.append((len(dl), [_tl(b) for b in dl]))
        sq = type("Sq", (d.IterableDataset,), {"__iter__": lambda self: iter(range(5)),
                                                 "__len__": lambda self: 5})
        out.append([_tl(b) for b in d.DataLoader(sq(), batch_size=2)])
        out.append(len(d.DataLoader(sq(), batch_size=2)))
        out.append(len(d.DataLoader(sq(), batch_size=2, drop_last=True)))
        out.append([_tl(b) for b in d.DataLoader(range(4), batch_size=2,
                                                 collate_fn=lambda b: sum(b))])
        return out
    e, t = _both(f)
    assert e == t


def test_seeded_shuffle_reproducible_and_torch_identical():
    def order(m, d, **kw):
        m.manual_seed(123)
        return [b.tolist() for b in d.DataLoader(range(20), batch_size=4, shuffle=True, **kw)]
    assert order(ember, ed) == order(ember, ed) == order(torch, td)
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    a = [b.tolist() for b in ed.DataLoader(range(9), batch_size=3, shuffle=True, generator=g1)]
    b = [b.tolist() for b in ed.DataLoader(range(9), batch_size=3, shuffle=True, generator=g2)]
    assert a == b


def test_dataloader_arg_errors():
    ds = list(range(4))
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            ed.DataLoader(ds, **kw)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        ed.DataLoader(Squares(3), shuffle=True)
    dl = ed.DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        dl.batch_size = 3


# ---------------------------------------------------------------- worker processes
class Rows(ed.Dataset):
    def __init__(self, n=11, fail_at=None, sleep=0.0):
        self.n, self.fail_at, self.sleep = n, fail_at, sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad index {i}")
        if self.sleep:
            time.sleep(self.sleep)
        info = ed.get_worker_info()
        return {"x": ember.full((2,), float(i)), "i": i,
                "w": -1 if info is None else info.id}


def test_workers_same_batches_as_main_process():
    ds = Rows(11)
    ref = [_tl({k: v for k, v in b.items() if k != "w"})
           for b in ed.DataLoader(ds, batch_size=3)]
    dl = ed.DataLoader(ds, batch_size=3, num_workers=2)
    got = list(dl)
    assert [_tl({k: v for k, v in b.items() if k != "w"}) for b in got] == ref
    assert [b["w"].tolist()[0] for b in got] == [0, 1, 0, 1]   # round-robin, in order
    assert len(dl) == 4


def test_workers_shuffle_reproducible():
    def run(nw):
        ember.manual_seed(7)
        return [b["i"].tolist() for b in ed.DataLoader(Rows(9), batch_size=2, shuffle=True,
                                                       num_workers=nw)]
    assert run(0) == run(2)


def _record_init(worker_id):
    info = ed.get_worker_info()
    assert info.id == worker_id
    info.dataset.init_ids = getattr(info.dataset, "init_ids", ()) + (worker_id,)


class InfoDS(ed.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = ed.get_worker_info()
        return ember.tensor([info.id, info.num_workers, info.seed % 1000003,
                             ember.initial_seed() % 1000003, len(getattr(self, "init_ids", ()))])


def test_worker_info_and_init_fn():
    assert ed.get_worker_info() is None
    g = ember.Generator().manual_seed(0)
    base = int(ember.empty((), dtype=ember.int64).random_(generator=g).item())
    dl = ed.DataLoader(InfoDS(), batch_size=None, num_workers=2, worker_init_fn=_record_init,
                       generator=ember.Generator().manual_seed(0))
    rows = [r.tolist() for r in dl]
    for k, r in enumerate(rows):
        wid = k % 2
        assert r[:2] == [wid, 2]
        assert r[2] == (base + wid) % 1000003 == r[3]
        assert r[4] == 1


def test_worker_exception_surfaces_with_traceback():
    dl = ed.DataLoader(Rows(8, fail_at=5), batch_size=2, num_workers=2)
    it = iter(dl)
    with pytest.raises(ValueError) as ei:
        for _ in it:
            pass
    msg = str(ei.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\n"
                          "Original Traceback (most recent call last):")
    assert "bad index 5" in msg and "__getitem__" in msg
    assert all(not w.is_alive() for w in it._workers)


def test_timeout():
    dl = ed.DataLoader(Rows(2, sleep=1.0), batch_size=1, num_workers=1, timeout=0.2)
    it = iter(dl)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(it)
    del it


def test_workers_shut_down_on_exhaustion_and_deletion():
    it = iter(ed.DataLoader(Rows(4), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert len(list(it)) == 2
    assert all(not w.is_alive() for w in workers)
    it = iter(ed.DataLoader(Rows(40), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it
    for w in workers:
        w.join(5)
    assert all(not w.is_alive() for w in workers)


def test_persistent_workers():
    dl = ed.DataLoader(Rows(5), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b["i"].tolist() for b in dl]
    pids = [w.pid for w in dl._iterator._workers]
    second = [b["i"].tolist() for b in dl]
    assert first == second == [[0, 1], [2, 3], [4]]
    assert [w.pid for w in dl._iterator._workers] == pids
    assert all(w.is_alive() for w in dl._iterator._workers)
    dl._iterator._shutdown_workers()


def test_iterable_dataset_sharding_with_workers():
    dl = ed.DataLoader(Squares(7), batch_size=2, num_workers=2)
    vals = sorted(v for b in dl for v in b.tolist())
    assert vals == sorted(i * i for i in range(7))
    dl = ed.DataLoader(Squares(7), batch_size=None, num_workers=2, persistent_workers=True)
    assert sorted(dl) == sorted(list(dl)) == sorted(i * i for i in range(7))
    dl._iterator._shutdown_workers()


def test_spawn_context():
    dl = ed.DataLoader(Rows(4), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [b["i"].tolist() for b in dl] == [[0, 1], [2, 3]]


_LOADER_ARG_CASES = [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1), dict(persistent_workers=True),
    dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_size=None, drop_last=True), dict(num_workers=1, multiprocessing_context="bogus"),
    dict(multiprocessing_context="spawn"), dict(num_workers=-1, timeout=-1),
]


@pytest.mark.parametrize("iterable", [False, True])
def test_dataloader_argument_errors_match_torch(iterable):
    """Each invalid combination raises torch's error class and text (the first check wins)."""
    import torch as T

    def error(make):
        try:
            make()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None

    def dataset(lib):
        if not iterable:
            return list(range(5))

        class Stream(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(3))
        return Stream()

    cases = _LOADER_ARG_CASES if not iterable else \
        [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]]), dict(shuffle=False),
         dict(sampler=[0], shuffle=True)]
    for kw in cases:
        want = error(lambda: T.utils.data.DataLoader(dataset(T), **kw))
        got = error(lambda: ember.utils.data.DataLoader(dataset(ember), **kw))
        assert got == want, kw
