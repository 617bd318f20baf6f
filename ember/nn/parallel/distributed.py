"""DistributedDataParallel: data parallel training over an ``ember.distributed`` group.

Each rank holds a replica (``self.module``); at construction rank 0's parameters and
buffers are broadcast (after checking that every rank has the same parameter shapes).
Gradients are reduced in buckets: flat per-dtype buffers holding parameters in reverse
order of use. A hook after each parameter's gradient accumulation marks it ready; when
every parameter of the next bucket is ready, its gradients are copied into the buffer
and an asynchronous all-reduce (or the registered comm hook) starts, while backward goes
on. A final callback of the backward call (``queue_callback``) waits for every bucket and
writes the averages back into ``.grad`` (with ``gradient_as_bucket_view``, ``.grad`` *is*
a view of the bucket). Inside ``ember.distributed.autograd.backward`` gradients are read
from and the averages written to that context's gradients instead (``.grad`` untouched).

Bucket layout follows torch: the first iteration uses one bucket in registration order;
after it, buckets are rebuilt in the order gradients became ready, the first capped at
1 MiB (or ``bucket_cap_mb`` if smaller), the others at ``bucket_cap_mb`` (a bucket closes
once it reaches its cap). With ``find_unused_parameters`` the buckets are fixed from the
start (the same caps, over parameters in registration order, last bucket first) and each
iteration's output graph is searched for parameters that will get no gradient; those are
marked ready at once (zeros), and a parameter unused on every rank keeps its ``.grad``.
``static_graph`` learns in the first iteration how often each parameter's hook fires and
which parameters are unused, reduces everything at the end of that iteration and rebuilds
the buckets after the second.

Uneven inputs: ``with ddp.join():`` (``ember.distributed.algorithms.join``) lets ranks
that ran out of inputs shadow the others' collectives with zeros.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager

import numpy as np

from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel", "GradBucket"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25


# ---------------------------------------------------------------- buckets
class GradBucket:
    """What a comm hook receives: one bucket's flat ``buffer()`` (gradients of
    ``parameters()``, already copied in), ``gradients()`` (views of the buffer shaped like
    the parameters), ``index()`` and ``is_last()``. ``set_buffer(t)`` replaces the buffer
    that later ``buffer()`` calls return (the reducer keeps its own)."""

    def __init__(self, index, buffer, gradients, parameters, is_last):
        self._index, self._buffer = index, buffer
        self._gradients, self._parameters = gradients, parameters
        self._is_last = is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self):
        return list(self._gradients)

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        return self._is_last

    def set_buffer(self, buffer):
        self._buffer = buffer


class _Bucket:
    """A flat buffer over parameters ``indices`` (one dtype) and their shaped views."""

    def __init__(self, index, indices, params):
        import ember
        self.index, self.indices = index, list(indices)
        sizes = [params[i].numel() for i in self.indices]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        self.buffer = ember.zeros(int(sum(sizes)), dtype=params[self.indices[0]].dtype)
        self.views = [self.buffer[o:o + n].view(params[i].shape)
                      for o, n, i in zip(self.offsets, sizes, self.indices)]
        self.pending = len(self.indices)
        self.work = self.future = None


def _assign(order, params, limits):
    """torch's assignment by size: tensors taken in ``order``, one open bucket per dtype
    that closes once its bytes reach its limit (``limits[k]`` for the dtype's k-th bucket,
    the last limit after that). Returns lists of parameter indices."""
    open_, done = {}, []
    for i in order:
        p = params[i]
        entry = open_.setdefault(p.dtype, [[], 0, 0])
        entry[0].append(i)
        entry[1] += p.numel() * p.element_size()
        if entry[1] >= limits[min(entry[2], len(limits) - 1)]:
            done.append(entry[0])
            open_[p.dtype] = [[], 0, entry[2] + 1]
    return done + [e[0] for e in open_.values() if e[0]]


def _tensors_in(obj):
    """The tensors in a (nested) forward output."""
    from ember._tensor import Tensor
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    elif hasattr(obj, "__dataclass_fields__"):
        obj = [getattr(obj, f) for f in obj.__dataclass_fields__]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors_in(o)]
    return []


def _reached_leaves(outputs):
    """ids of the leaf tensors whose AccumulateGrad nodes the outputs' graphs reach."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    for t in outputs:
        if t.grad_fn is None and t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        var = getattr(node, "variable", None)
        if var is not None:
            leaves.add(id(var))
        stack.extend(nx for nx, _ in node.next_functions if nx is not None)
    return leaves


_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}\n In addition, "
    "you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL "
    "to print out information about which particular parameters did not receive gradient on "
    "this rank as part of this error")

_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the "
    "following reasons: 1) Use of a module parameter outside the `forward` function. Please "
    "make sure model parameters are not shared across multiple concurrent forward-backward "
    "passes. or try to use _set_static_graph() as a workaround if this module graph does not "
    "change during training loop.2) Reused parameters in multiple reentrant backward passes. "
    "For example, if you use multiple `checkpoint` functions to wrap the same part of your "
    "model, it would result in the same set of parameters been used by different reentrant "
    "backward passes multiple times, and hence marking a variable ready multiple times. DDP "
    "does not support such use cases in default. You can try to use _set_static_graph() as a "
    "workaround if your module graph does not change over iterations.\nParameter at index "
    "{index} with name {name} has been marked as ready twice. This means that multiple "
    "autograd engine  hooks have fired for this particular parameter during this iteration.")


# ---------------------------------------------------------------- the module
class DistributedDataParallel(Module):
    """Wraps ``module`` (``self.module``; state_dict keys gain ``module.``) and averages
    its gradients over ``process_group`` (default: the world) during backward.

    A ``Joinable`` (registered by ``ember.distributed.algorithms.join``, which this file
    imports lazily: ``ember.nn`` must import without ``ember.distributed``)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        Module.__init__(self)
        import ember.distributed as dist
        from ember.distributed.algorithms.join import _JoinConfig
        self._join_config = _JoinConfig.construct_disabled_join_config()
        for name, value in (("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                            ("bucket_cap_mb_list", bucket_cap_mb_list),
                            ("skip_all_reduce_unused_params",
                             skip_all_reduce_unused_params or None)):
            if value is not None:
                raise NotImplementedError(f"ember's DistributedDataParallel does not support "
                                          f"{name}")
        ignored = getattr(module, "_ddp_params_and_buffers_to_ignore", ())
        named = [(n, p) for n, p in module.named_parameters()
                 if p.requires_grad and n not in ignored]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids or output_device is not None:
            raise ValueError(
                f"DistributedDataParallel device_ids and output_device arguments only work "
                f"with single-device/multiple-device GPU modules or CPU modules, but got "
                f"device_ids {device_ids}, output_device {output_device}, and module "
                f"parameters {{device(type='cpu')}}.")
        from ember.nn.modules.batchnorm import SyncBatchNorm
        if any(isinstance(m, SyncBatchNorm) for m in module.modules()):
            # torch's SyncBatchNorm synchronises through GPU kernels only; on CPU its DDP
            # refuses the module (ember's would normalise each rank on its own)
            raise ValueError("SyncBatchNorm layers only work with GPU modules")
        self.module = module
        self.device_ids, self.output_device, self.dim = None, None, dim
        self.device_type, self.device = "cpu", None
        self.process_group = dist.distributed_c10d._resolve(process_group)
        self.static_graph = False
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None
                                     else bucket_cap_mb) * 1024 * 1024)
        self._params = [p for _, p in named]
        self._param_names = [n for n, _ in named]
        self._buffers_to_sync = [b for n, b in module.named_buffers() if n not in ignored]
        self._verify_params()
        if init_sync:
            self._broadcast(self._params + self._buffers_to_sync, src=0)

        self._comm_hook = self._comm_state = None
        self._divide_by_initial_world_size = True
        self._sync_iterations = 0           # iterations whose gradients were reduced
        self._rebuilt = False
        self._static_counts = None          # static graph: hook calls per parameter
        self._static_unused = ()
        self._expect_hooks = False
        self._dist_grads = None             # inside a dist autograd backward: its grads
        if find_unused_parameters:
            order = list(range(len(self._params)))
            self._rebuilt = True            # the layout is fixed from the start
            self._buckets = self._make_buckets(list(reversed(self._assign(order))))
        else:
            self._buckets = self._make_buckets([list(range(len(self._params)))])
        ref = weakref.ref(self)
        self._hook_handles = [p.register_post_accumulate_grad_hook(_hook(ref, i))
                              for i, p in enumerate(self._params)]
        if static_graph:
            self._set_static_graph()

    # ---- construction helpers
    def _assign(self, order):
        first = min(_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        return _assign(order, self._params, [first, self.bucket_bytes_cap])

    def _make_buckets(self, groups):
        buckets = [_Bucket(k, idx, self._params) for k, idx in enumerate(groups)]
        self._slot = {}
        for b in buckets:
            for pos, i in enumerate(b.indices):
                self._slot[i] = (b, pos)
        if self.gradient_as_bucket_view:
            import ember
            with ember.no_grad():
                for b in buckets:
                    for pos, i in enumerate(b.indices):
                        p = self._params[i]
                        if p.grad is not None:
                            b.views[pos].copy_(p.grad)
                            p.grad = b.views[pos]
        return buckets

    def _verify_params(self):
        """Every rank must hold as many parameters as every other, of rank 0's shapes."""
        import ember.distributed as dist
        pg = self.process_group
        mine = [tuple(p.shape) for p in self._params]
        everyone = [None] * pg.size()
        dist.all_gather_object(everyone, mine, group=pg)
        me = pg.rank()
        for r, theirs in enumerate(everyone):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} "
                                   f"has {len(mine)} params, while rank {r} has inconsistent "
                                   f"{len(theirs)} params.")
        for r, theirs in enumerate(everyone):
            for i, (a, b) in enumerate(zip(theirs, everyone[0])):
                if a != b:
                    if me == r:
                        raise RuntimeError(f"[{me}]: params[{i}] in this process with sizes "
                                           f"{list(a)} appears not to match sizes of the same "
                                           f"param in process 0.")
                    raise RuntimeError(f"[{me}]: params[{i}] in process {r} with sizes "
                                       f"{list(a)} appears not to match sizes of the same "
                                       f"param in process 0.")

    def _broadcast(self, tensors, src):
        """Broadcast ``tensors`` from group rank ``src``, one flat message per dtype."""
        import ember
        import ember.distributed as dist
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        with ember.no_grad():
            for group in by_dtype.values():
                flat = ember.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, group=self.process_group, group_src=src)
                at = 0
                for t in group:
                    n = t.numel()
                    t.copy_(flat[at:at + n].view(t.shape))
                    at += n

    # ---- forward
    def forward(self, *inputs, **kwargs):
        self._pre_forward()
        output = self.module(*inputs, **kwargs)
        self._post_forward(output)
        return output

    def _pre_forward(self):
        import ember
        if self._expect_hooks and self._hooks_fired:
            missing = [i for i in range(len(self._params)) if i not in self._ready]
            raise RuntimeError(_UNFINISHED.format(rank=self.process_group.rank(),
                                                  indices=" ".join(map(str, missing))))
        self._expect_hooks = False
        if ember.is_grad_enabled() and self.require_backward_grad_sync:
            self._maybe_rebuild()
        self._active_ranks = None
        if self._join_config.enable:
            from ember.distributed.algorithms.join import Join
            work = Join.notify_join_context(self)
            if work is not None:
                self._active_ranks = work
        if self._will_sync_buffers():
            src = self._find_common_rank(self.process_group.rank(), True) \
                if self._join_config.enable else 0
            self._broadcast(self._buffers_to_sync, src)

    def _will_sync_buffers(self):
        return (self.require_forward_param_sync and self.broadcast_buffers and
                bool(self._buffers_to_sync) and self.process_group.size() > 1)

    def _maybe_rebuild(self):
        """Rebuild the buckets in the order gradients became ready (once: after the first
        synchronized iteration, the second with a static graph)."""
        when = 2 if self.static_graph else 1
        if self._rebuilt or self._sync_iterations != when:
            return
        order = list(self._ready_order)
        seen = set(order)
        order += [i for i in reversed(range(len(self._params))) if i not in seen]
        self._buckets = self._make_buckets(self._assign(order))
        self._rebuilt = True

    def _post_forward(self, output):
        import ember
        if not (ember.is_grad_enabled() and self.require_backward_grad_sync):
            return
        self._prepare_for_backward(output)

    def _prepare_for_backward(self, output):
        self._expect_hooks = True
        self._hooks_fired = False
        self._finalize_queued = False
        self._ready, self._ready_order = set(), []
        self._hook_calls = [0] * len(self._params)
        self._locally_used = np.zeros(len(self._params), np.int32)
        self._used_work = None
        self._next_bucket = 0
        self._div_factor = self.process_group.size()
        if self._active_ranks is not None and not self._divide_by_initial_world_size:
            self._div_factor = int(self._active_ranks.result()[0].item())
        for b in self._buckets:
            b.pending, b.work, b.future = len(b.indices), None, None
        if self.static_graph:
            for i in self._static_unused:
                self._mark_ready(i)
        elif self.find_unused_parameters:
            reached = _reached_leaves(_tensors_in(output))
            for i, p in enumerate(self._params):
                if id(p) not in reached:
                    self._mark_ready(i)

    # ---- backward: readiness, buckets, finalization
    def _autograd_hook(self, i):
        if not self._expect_hooks:
            return
        self._locally_used[i] = 1
        if not self._hooks_fired:
            self._hooks_fired = True
            from ember.autograd import engine
            from ember.distributed import autograd as dist_autograd
            self._dist_grads = dist_autograd._grads_target()
            engine._tasks.stack[0].final_callbacks.append(self._finalize)
        self._hook_calls[i] += 1
        if self.static_graph:
            if self._static_counts is None or self._hook_calls[i] < self._static_counts[i]:
                return                      # first iteration: everything at the end
        if i in self._ready:
            if self.find_unused_parameters or self._slot[i][0].pending == 0:
                raise RuntimeError(_TWICE.format(index=i, name=self._param_names[i]))
            return
        self._mark_ready(i)

    def _mark_ready(self, i):
        self._ready.add(i)
        self._ready_order.append(i)
        bucket = self._slot[i][0]
        bucket.pending -= 1
        buckets = self._buckets
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending == 0:
            self._launch(buckets[self._next_bucket])
            self._next_bucket += 1
            if self._next_bucket == len(buckets) and self._tracks_usage():
                self._launch_used_map()

    def _tracks_usage(self):
        return self.find_unused_parameters or (self.static_graph and
                                               self._static_counts is None)

    def _launch_used_map(self):
        import ember
        import ember.distributed as dist
        self._used = ember.from_numpy(self._locally_used.copy())
        self._used_work = dist.all_reduce(self._used, group=self.process_group,
                                          async_op=True)

    def _launch(self, bucket):
        """Copy the bucket's gradients into its buffer and start reducing it."""
        import ember
        import ember.distributed as dist
        with ember.no_grad():
            in_context = self._dist_grads is not None
            for pos, i in enumerate(bucket.indices):
                p, view = self._params[i], bucket.views[pos]
                g = self._dist_grads.get(p) if in_context else p.grad
                if g is None:
                    view.zero_()
                elif not _same_memory(g, view):
                    view.copy_(g)
                    if self.gradient_as_bucket_view and not in_context:
                        p.grad = view
            if self._comm_hook is not None:
                grad_bucket = GradBucket(bucket.index, bucket.buffer, bucket.views,
                                         [self._params[i] for i in bucket.indices],
                                         bucket.index == len(self._buckets) - 1)
                bucket.future = self._comm_hook(self._comm_state, grad_bucket)
            else:
                bucket.buffer.div_(self._div_factor)
                bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group,
                                              async_op=True)

    def _finalize(self):
        """End of backward: wait for every bucket and write the averages into ``.grad``."""
        if not self._expect_hooks:
            return
        if self.static_graph and self._static_counts is None:
            self._static_counts = list(self._hook_calls)
            self._static_unused = [i for i, n in enumerate(self._hook_calls) if n == 0]
            for i in range(len(self._params)):
                if i not in self._ready:
                    self._mark_ready(i)
        if self._next_bucket < len(self._buckets):
            return                      # a parameter got no gradient: the next forward fails
        import ember
        with ember.no_grad():
            for bucket in self._buckets:
                if bucket.work is not None:
                    bucket.work.wait()
                else:
                    result = bucket.future.wait()
                    if isinstance(result, (list, tuple)):
                        result = result[0]
                    if result is not bucket.buffer:
                        bucket.buffer.copy_(result)
            used = None
            if self._used_work is not None:
                self._used_work.wait()
                used = self._used.numpy()
            for bucket in self._buckets:
                for pos, i in enumerate(bucket.indices):
                    if used is not None and not used[i]:
                        continue            # unused on every rank: .grad untouched
                    p, view = self._params[i], bucket.views[pos]
                    if self._dist_grads is not None:
                        self._dist_grads[p] = view.clone()
                    elif self.gradient_as_bucket_view:
                        if p.grad is None or not _same_memory(p.grad, view):
                            p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)
        self._expect_hooks = False
        self._dist_grads = None
        self._sync_iterations += 1

    # ---- public API
    @contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it reduces the
        sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """``hook(state, GradBucket) -> Future`` replaces each bucket's all-reduce; the
        future's value (a tensor, or a list holding one) becomes the bucket's content."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self._comm_hook, self._comm_state = hook, state

    def _register_builtin_comm_hook(self, comm_hook_type):
        raise NotImplementedError("ember's DDP has no C++ builtin comm hooks: use "
                                  "register_comm_hook with ddp_comm_hooks.default_hooks")

    def _set_static_graph(self):
        """The graph is the same every iteration: hook counts and unused parameters are
        learned in the first one (reentrant checkpointing and reused parameters work)."""
        if self.static_graph:
            return
        if self._sync_iterations > 0:
            raise RuntimeError("_set_static_graph must be called before the first "
                               "iteration (forward/backward) of DDP")
        self.static_graph = True
        self._rebuilt = False
        self._buckets = self._make_buckets([list(range(len(self._params)))])

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        module._ddp_params_and_buffers_to_ignore = list(params_and_buffers_to_ignore)

    def will_sync_module_buffers(self):
        return self._will_sync_buffers()

    def _find_common_rank(self, input_rank, rank_cond):
        """The largest rank (within the group) among those with ``rank_cond`` true."""
        import ember
        import ember.distributed as dist
        t = ember.tensor([input_rank if rank_cond else -1])
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        if t.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process.")
        return int(t.item())

    # ---- Join
    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """``with ddp.join():`` for uneven inputs; gradients are divided by the initial
        world size (or, if ``divide_by_initial_world_size=False``, by the ranks still
        active)."""
        from ember.distributed.algorithms.join import Join
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        self._divide_by_initial_world_size = kwargs.get("divide_by_initial_world_size", True)
        from ember.distributed.algorithms.join import JoinHook

        class _DDPJoinHook(JoinHook):
            """A joined rank's shadow of each iteration (the join all-reduce itself runs in
            ``Join``), then the last joiner's parameters and buffers broadcast to all."""

            def main_hook(hook):
                self._join_main_hook()

            def post_hook(hook, is_last_joiner):
                src = self._find_common_rank(self.process_group.rank(), is_last_joiner)
                self._broadcast(self._params + self._buffers_to_sync, src)
        return _DDPJoinHook()

    def _join_main_hook(self):
        """The buffer broadcast, every bucket's all-reduce and the unused-parameter map of
        one iteration, with zeros."""
        self._maybe_rebuild()
        if self._will_sync_buffers():
            src = self._find_common_rank(self.process_group.rank(), False)
            self._broadcast(self._buffers_to_sync, src)
        self._match_all_reduce_for_bwd_pass()
        if self.find_unused_parameters:
            self._match_unused_params_allreduce()

    @property
    def join_device(self):
        import ember
        return ember.device("cpu")

    @property
    def join_process_group(self):
        return self.process_group

    def _match_all_reduce_for_bwd_pass(self):
        """A joined rank's share of one iteration's backward: zeros for every bucket."""
        import ember
        import ember.distributed as dist
        works = []
        for b in self._buckets:
            if self._comm_hook is not None:
                zero = ember.zeros_like(b.buffer)
                views = [zero[o:o + v.numel()].view(v.shape)
                         for o, v in zip(b.offsets, b.views)]
                grad_bucket = GradBucket(b.index, zero, views,
                                         [self._params[i] for i in b.indices],
                                         b.index == len(self._buckets) - 1)
                works.append(self._comm_hook(self._comm_state, grad_bucket))
            else:
                works.append(dist.all_reduce(ember.zeros_like(b.buffer),
                                             group=self.process_group, async_op=True))
        for w in works:
            w.wait()

    def _match_unused_params_allreduce(self):
        import ember
        import ember.distributed as dist
        dist.all_reduce(ember.zeros(len(self._params), dtype=ember.int32),
                        group=self.process_group)


def _same_memory(a, b):
    return a._data.ctypes.data == b._data.ctypes.data and a._data.shape == b._data.shape


def _hook(ref, i):
    def hook(param):
        ddp = ref()
        if ddp is not None:
            ddp._autograd_hook(i)
    return hook
