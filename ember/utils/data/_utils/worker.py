"""What runs inside a DataLoader worker process."""
import os
import queue
import random

import numpy as np

__all__ = ["get_worker_info", "WorkerInfo"]

MP_STATUS_CHECK_INTERVAL = 5.0


class WorkerInfo:
    """Read-only facts about the current worker: ``id``, ``num_workers``, ``seed``,
    ``dataset``."""

    def __init__(self, **fields):
        object.__setattr__(self, "_fields", tuple(fields))
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        body = ", ".join(f"{name}={getattr(self, name)}" for name in self._fields)
        return f"{type(self).__name__}({body})"


_worker_info = None


def get_worker_info():
    """This worker's WorkerInfo, or ``None`` in the main process."""
    return _worker_info


class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an iterable dataset has run out."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""

    def __init__(self, seed=None):
        self.seed = seed


def _generate_state(base_seed, worker_id):
    """The NumPy seed of a worker: four 32-bit words from a SeedSequence whose entropy
    words are (worker_id, low half of base_seed, high half of base_seed)."""
    return [int(w) for w in np.random.SeedSequence(worker_id + (base_seed << 32))
            .generate_state(4)]


def _seed_everything(base_seed, worker_id):
    import ember
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(kind, dataset, index_queue, result_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """Serve ``(batch_idx, index)`` tasks from ``index_queue`` until the ``None`` sentinel
    arrives or the parent process dies; each answer is ``(batch_idx, data)`` where data is
    the batch, an ExceptionWrapper, or an _IterableDatasetStopIteration."""
    global _worker_info
    from ember.utils.data._utils import ExceptionWrapper
    from ember.utils.data._utils.fetch import _DatasetKind

    where = f"in DataLoader worker process {worker_id}"

    def new_fetcher():
        return _DatasetKind.create_fetcher(kind, dataset, auto_collation, collate_fn,
                                           drop_last)

    try:
        seed = _seed_everything(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        pending_error = None        # a failed init is reported as the first task's answer
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = new_fetcher()
        except Exception:
            pending_error = ExceptionWrapper(where=where)

        exhausted = False
        parent = os.getppid()
        while os.getppid() == parent:
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if task is None:
                break
            if isinstance(task, _ResumeIteration):
                result_queue.put((task, None))
                exhausted = False
                if task.seed is not None:       # a pipe's shufflers: this epoch's shared seed
                    from ember.utils.data.dataloader import _seed_pipe
                    _seed_pipe(dataset, task.seed)
                fetcher = new_fetcher()
                continue
            if exhausted or done_event.is_set():
                continue
            batch_idx, index = task
            if pending_error is not None:
                data, pending_error = pending_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if kind != _DatasetKind.Iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        exhausted = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            result_queue.put((batch_idx, data))
            del data, task, index
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        # nobody reads the results any more: do not wait for them to be flushed
        result_queue.cancel_join_thread()
        result_queue.close()
