"""DataLoader: batches from a dataset, in this process or in worker processes.

With ``num_workers > 0`` (see ``_MultiProcessingDataLoaderIter``) each worker has its own
index queue and all of them answer on one result queue. Batch ``k`` goes to the workers
round-robin; answers that arrive early wait in a reorder buffer keyed by ``k``, so batches
come out in sampler order. A worker stops when it reads the ``None`` sentinel.
"""
import functools
import itertools
import math
import os
import sys
import multiprocessing
import queue
import warnings

import ember
from ember.utils.data._utils import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper
from ember.utils.data._utils.collate import default_collate, default_convert
from ember.utils.data._utils.fetch import _DatasetKind
from ember.utils.data._utils.worker import (_IterableDatasetStopIteration, _ResumeIteration,
                                            _worker_loop, get_worker_info)
from ember.utils.data.dataset import IterableDataset
from ember.utils.data.datapipes.datapipe import (IterDataPipe, MapDataPipe,
                                                 _IterDataPipeSerializationWrapper,
                                                 _MapDataPipeSerializationWrapper)
from ember.utils.data.datapipes.iter.sharding import SHARDING_PRIORITIES
from ember.utils.data import graph_settings
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

# attributes fixed once the DataLoader is built
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """The 'sampler' of an iterable dataset: ``None`` forever."""

    def __iter__(self):
        return itertools.repeat(None)


def _raise_first(checks) -> None:
    """Raise ValueError with the message of the first (failed, message) pair that failed."""
    for failed, message in checks:
        if failed:
            raise ValueError(message)


def _check_args(dataset, num_workers, timeout, prefetch_factor, persistent_workers, shuffle,
                sampler, batch_sampler, batch_size, drop_last):
    """The DataLoader's argument checks, in torch's order (the first failure is reported)."""
    workers = num_workers > 0
    prefetch = prefetch_factor is not None
    _raise_first([
        (num_workers < 0, "num_workers option should be non-negative; "
                          "use num_workers=0 to disable multiprocessing."),
        (timeout < 0, "timeout option should be non-negative"),
        (prefetch and not workers,
         "prefetch_factor option could only be specified in multiprocessing."
         "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."),
        (prefetch and workers and prefetch_factor < 0,
         "prefetch_factor option should be non-negative"),
        (persistent_workers and not workers, "persistent_workers option needs num_workers > 0"),
    ])
    if isinstance(dataset, IterableDataset):     # its order comes from the dataset itself
        _raise_first((given, f"DataLoader with IterableDataset: expected unspecified {name} "
                             f"option, but got {name}={value}")
                     for name, value, given in (("shuffle", shuffle, shuffle is True),
                                                ("sampler", sampler, sampler is not None),
                                                ("batch_sampler", batch_sampler,
                                                 batch_sampler is not None)))
    custom_batches = batch_sampler is not None
    _raise_first([
        (shuffle and sampler is not None, "sampler option is mutually exclusive with shuffle"),
        (custom_batches and (batch_size != 1 or shuffle or sampler is not None or drop_last),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
         "and drop_last"),
        (not custom_batches and batch_size is None and drop_last,
         "batch_size=None option disables auto-batching and is mutually exclusive with "
         "drop_last"),
    ])


class DataLoader:
    """Iterate over ``dataset`` in batches: optionally shuffled, optionally loaded by
    ``num_workers`` worker processes."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if isinstance(dataset, IterDataPipe):
            if shuffle is not None:     # torch keeps the pipe it was given (a Shuffler that
                graph_settings.apply_shuffle_settings(dataset, shuffle=shuffle)  # is added
                shuffle = None          # at the end is dropped)
            dataset = _IterDataPipeSerializationWrapper(dataset)
        elif isinstance(dataset, MapDataPipe):
            dataset = _MapDataPipeSerializationWrapper(dataset)
        iterable = isinstance(dataset, IterableDataset)
        if not iterable:
            shuffle = bool(shuffle)
        _check_args(dataset, num_workers, timeout, prefetch_factor, persistent_workers,
                    shuffle, sampler, batch_sampler, batch_size, drop_last)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if batch_sampler is not None:       # the batch sampler decides everything
            batch_size, drop_last = None, False
        if sampler is None:       # indices: none for an iterable dataset, else in order/shuffled
            sampler = _InfiniteConstantSampler() if iterable else \
                RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:    # batches are collated; single samples only converted
            collate_fn = default_convert if batch_sampler is None else default_collate
        vars(self).update(
            dataset=dataset, num_workers=num_workers, prefetch_factor=prefetch_factor,
            _dataset_kind=_DatasetKind.Iterable if iterable else _DatasetKind.Map,
            pin_memory=pin_memory, pin_memory_device=pin_memory_device, timeout=timeout,
            worker_init_fn=worker_init_fn, in_order=in_order,  # batches arrive in order here
            batch_size=batch_size, drop_last=drop_last, sampler=sampler,
            batch_sampler=batch_sampler, generator=generator, collate_fn=collate_fn,
            persistent_workers=persistent_workers)
        self.multiprocessing_context = multiprocessing_context    # checked by its setter
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    def __setattr__(self, name, value):
        if self._initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def multiprocessing_context(self):
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start "
                        f"method in {methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            if not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={ctx}")
        self._mp_context = ctx

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.pin_memory:       # torch warns as each iterator starts, not at construction
            if self.pin_memory_device:
                warnings.warn("pin_memory_device is deprecated, the current accelerator will "
                              "be used as the device,ignore pin_memory_device="
                              f"'{self.pin_memory_device}'.")
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.")
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        """A new iterator per epoch, except that persistent workers are kept and reset."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is not None:
                self._iterator._reset(self)
            else:
                self._iterator = self._get_iterator()
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Map:
            return len(self._index_sampler)
        n = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def check_worker_number_rationality(self):
        """Warn, as torch does, when more workers are asked for than this process has CPUs
        (the cores it may run on)."""
        if self.num_workers <= 0:
            return
        try:
            suggest = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            suggest = os.cpu_count()
        if suggest is not None and self.num_workers > suggest:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                          f"total. Our suggested max number of worker in current system is "
                          f"{suggest}, which is smaller than what this DataLoader is going to "
                          f"create. Please be aware that excessive worker creation might get "
                          f"DataLoader running slow or even freeze, lower the worker number to "
                          f"avoid potential slowness/freeze if necessary.", stacklevel=3)


_COPIED_FROM_LOADER = ("dataset", "_dataset_kind", "_auto_collation", "drop_last",
                       "_index_sampler", "num_workers", "prefetch_factor", "timeout",
                       "collate_fn", "persistent_workers")


def _draw_seed(generator) -> int:
    """One int64 from ``generator`` (the global one when None), as torch draws a base seed."""
    holder = ember.empty((), dtype=ember.int64)
    holder.random_(generator=generator)
    return int(holder.item())


def _initialised_dist():
    """ember.distributed when a process group is up, else None (never imports it)."""
    dist = sys.modules.get("ember.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _world():
    """``(world_size, rank)`` of an initialised ember.distributed, else ``(1, 0)``."""
    dist = _initialised_dist()
    return (dist.get_world_size(), dist.get_rank()) if dist is not None else (1, 0)


def _shared_pipe_seed(generator) -> int:
    """The seed every rank's pipes share: one int64 drawn here from ``generator``, replaced
    by rank 0's (a broadcast of the int64 tensor, as torch does) when distributed."""
    holder = ember.empty((), dtype=ember.int64)
    holder.random_(generator=generator)
    dist = _initialised_dist()
    if dist is not None:
        dist.broadcast(holder, src=0)
    return int(holder.item())


def _seed_pipe(datapipe, shared_seed):
    """Seed every random pipe of ``datapipe`` from a generator seeded with ``shared_seed``."""
    rng = ember.Generator()
    rng.manual_seed(shared_seed)
    graph_settings.apply_random_seed(datapipe, rng)


def _datapipe_worker_init(worker_init_fn, shared_seed, world_size, rank, worker_id):
    """In a worker: seed the pipe's shufflers alike in every worker, take this worker's
    shard (rank-major when distributed), then run the user's ``worker_init_fn``."""
    info = get_worker_info()
    _seed_pipe(info.dataset, shared_seed)
    if world_size > 1:
        graph_settings.apply_sharding(info.dataset, world_size, rank,
                                      SHARDING_PRIORITIES.DISTRIBUTED)
    graph_settings.apply_sharding(info.dataset, info.num_workers, worker_id,
                                  SHARDING_PRIORITIES.MULTIPROCESSING)
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


class _BaseDataLoaderIter:
    """What both iterators share: the index sampler, the base seed, the length check."""

    def __init__(self, loader):
        for name in _COPIED_FROM_LOADER:          # loader.x -> self._x
            setattr(self, "_" + name.lstrip("_"), getattr(loader, name))
        self._pin_memory = False
        self._sampler_iter = iter(self._index_sampler)
        self._worker_init_fn = loader.worker_init_fn
        if isinstance(self._dataset, IterDataPipe):   # shufflers seeded alike everywhere;
            self._shared_seed = _shared_pipe_seed(loader.generator)   # drawn first, as in torch
            _seed_pipe(self._dataset, self._shared_seed)
        # drawn before the sampler draws anything (it only draws on first next())
        self._base_seed = _draw_seed(loader.generator)
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)) and self._num_workers > 0:
            self._worker_init_fn = functools.partial(
                _datapipe_worker_init, loader.worker_init_fn,
                getattr(self, "_shared_seed", 0), *_world())
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        if isinstance(self._dataset, IterDataPipe):   # torch draws a fresh shared seed here
            self._shared_seed = _shared_pipe_seed(loader.generator)
            _seed_pipe(self._dataset, self._shared_seed)

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        promised = self._IterableDataset_len_called
        if self._dataset_kind == _DatasetKind.Iterable and promised is not None \
                and self._num_yielded > promised:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{promised} (when accessing len(dataloader)), "
                   f"but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not "
                        "properly configuring the IterableDataset replica at each worker. "
                        "Please see https://pytorch.org/docs/stable/data.html"
                        "#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg)
        return data

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", type(self).__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetches each batch in this process, when it is asked for."""

    def __init__(self, loader):
        super().__init__(loader)
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)):   # (1, 0) alone, as
            graph_settings.apply_sharding(self._dataset, *_world())   # torch: it resets
            # manual DEFAULT sharding and refuses two sharding pipes on one path
        self._fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loads batches in worker processes.

    Per epoch: ``_sent`` batches handed out, ``_next`` the next one to deliver,
    ``_owner[k]`` the worker that has batch ``k``, ``_buffer[k]`` batch ``k`` if it arrived
    early, ``_active[w]`` whether worker ``w`` still takes work. At most
    ``prefetch_factor * num_workers`` batches are requested ahead.
    """

    _shutdown = True        # until workers exist, there is nothing to shut down

    def __init__(self, loader):
        super().__init__(loader)
        loader.check_worker_number_rationality()
        ctx = loader.multiprocessing_context or multiprocessing
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._stopped = set()           # workers already sent the sentinel
        self._active = [True] * self._num_workers
        self._shutdown = False
        try:
            for wid in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                proc = ctx.Process(target=_worker_loop, daemon=True, args=(
                    self._dataset_kind, self._dataset, index_queue, self._result_queue,
                    self._done_event, self._auto_collation, self._collate_fn,
                    self._drop_last, self._base_seed, self._worker_init_fn, wid,
                    self._num_workers))
                proc.start()
                self._index_queues.append(index_queue)
                self._workers.append(proc)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._sent = self._next = 0
        self._owner, self._buffer = {}, {}
        self._active = [True] * self._num_workers
        self._turns = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # new epoch for persistent workers: wait until each has restarted its
            # fetcher, dropping answers left over from an abandoned epoch
            for q in self._index_queues:
                q.put(_ResumeIteration(getattr(self, "_shared_seed", None)))
            waiting = self._num_workers
            while waiting:
                key, _ = self._get()
                waiting -= isinstance(key, _ResumeIteration)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._request()

    def _request(self):
        """Send the next index to the next active worker (if there is one)."""
        try:
            index = self._next_index()
        except StopIteration:
            return
        worker = next((w for w in itertools.islice(self._turns, self._num_workers)
                       if self._active[w]), None)
        if worker is None:
            return
        self._index_queues[worker].put((self._sent, index))
        self._owner[self._sent] = worker
        self._sent += 1

    def _get(self):
        """One answer from the result queue, watching for dead workers and the timeout."""
        wait = self._timeout if self._timeout > 0 else MP_STATUS_CHECK_INTERVAL
        while True:
            try:
                return self._result_queue.get(timeout=wait)
            except Exception as err:
                dead = [w for wid, w in enumerate(self._workers)
                        if self._active[wid] and not w.is_alive()]
                if dead:
                    for w in dead:
                        self._stop_worker(self._workers.index(w))
                    pids = ", ".join(str(w.pid) for w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                       "unexpectedly") from err
                if not isinstance(err, queue.Empty):
                    raise
                if self._timeout > 0:
                    raise RuntimeError(
                        f"DataLoader timed out after {self._timeout} seconds") from None

    def _next_data(self):
        while True:
            # skip batches that will never come (their worker ran out of data)
            while self._next < self._sent and self._next not in self._buffer \
                    and not self._active[self._owner[self._next]]:
                del self._owner[self._next]
                self._next += 1
            if self._next >= self._sent:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if self._next in self._buffer:
                return self._deliver(self._buffer.pop(self._next))
            key, data = self._get()
            if isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._active[data.worker_id] = False
                else:
                    self._stop_worker(data.worker_id)
                self._request()
            elif key == self._next:
                return self._deliver(data)
            elif key in self._owner:
                self._buffer[key] = data

    def _deliver(self, data):
        del self._owner[self._next]
        self._next += 1
        self._request()
        if isinstance(data, ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _stop_worker(self, wid):
        """Send worker ``wid`` the sentinel; it takes no more work."""
        self._active[wid] = False
        if wid not in self._stopped:
            self._stopped.add(wid)
            self._index_queues[wid].put(None)

    def _shutdown_workers(self):
        """Stop every worker (sentinel, join, terminate stragglers); safe to call twice."""
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for wid in range(len(self._workers)):
                self._stop_worker(wid)
            for w in self._workers:
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues + [self._result_queue]:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:   # noqa: BLE001 - may run during interpreter teardown
            pass
