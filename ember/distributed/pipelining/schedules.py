"""Schedules: the order in which each rank runs forward (F) and backward (B) of each
microbatch on its stage(s).

``step(*args, target=None, losses=None, **kwargs)``: the first stage passes the batch, the
last passes ``target`` and gets each microbatch's loss in ``losses``; the last stage
returns the merged output. With ``loss_fn``, every microbatch's loss is backpropagated and
(``scale_grads=True``) the stage parameters' ``.grad`` is divided by ``n_microbatches``
afterwards, so equal microbatches give the full batch's gradient of a mean loss.
"""
import ember
from ember.distributed.pipelining._utils import PipeliningMetadataError
from ember.distributed.pipelining.microbatch import (TensorChunkSpec, merge_chunks,
                                                     split_args_kwargs_into_chunks)

_F, _B = "F", "B"


class _PipelineSchedule:
    def __init__(self, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        if n_microbatches < 1:
            raise ValueError(f"n_microbatches must be at least 1, got {n_microbatches}")
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self.scale_grads = scale_grads
        self._has_backward = loss_fn is not None

    def _split_inputs(self, args, kwargs):
        arg_mbs, kwarg_mbs = split_args_kwargs_into_chunks(
            args, kwargs, self._n_microbatches, self._args_chunk_spec,
            self._kwargs_chunk_spec)
        if len(arg_mbs) != self._n_microbatches:
            raise ValueError(f"Expecting {self._n_microbatches} arg_mbs but got "
                             f"{len(arg_mbs)}")
        return arg_mbs, kwarg_mbs

    def _split_target(self, target):
        if target.dim() == 0 or target.shape[0] < self._n_microbatches:
            raise AssertionError(f"Tensor size {target.shape[0] if target.dim() else 0} "
                                 f"is smaller than num_chunks")
        return list(ember.tensor_split(target, self._n_microbatches, 0))

    def _run(self, stages, order, args, kwargs, target, losses, return_outputs):
        """Run ``order`` (a list of (F or B, stage, microbatch)) on this rank's ``stages``."""
        for stage in stages:
            stage.clear_runtime_states()
            stage.has_backward = self._has_backward
        first = any(s.is_first for s in stages)
        last = [s for s in stages if s.is_last]
        arg_mbs, kwarg_mbs = self._split_inputs(args, kwargs) if first else (None, None)
        if last and self._has_backward and target is None:
            raise PipeliningMetadataError(f"Stage {last[0].stage_index}: loss_fn and "
                                          f"target required for last stage")
        targets = self._split_target(target) if last and self._has_backward else None
        mb_losses = {}
        last_b = {id(stage): i for i, (kind, stage, _) in enumerate(order) if kind == _B}
        for i, (kind, stage, mb) in enumerate(order):
            if kind == _F:
                out = stage.forward_one_chunk(
                    mb, arg_mbs[mb] if stage.is_first else (),
                    kwarg_mbs[mb] if stage.is_first else None)
                if stage.is_last and self._has_backward:
                    mb_losses[mb] = self._loss_fn(out, targets[mb])
            else:
                stage.backward_one_chunk(mb, mb_losses.get(mb) if stage.is_last else None,
                                         last_backward=last_b[id(stage)] == i)
        for stage in stages:
            stage.wait_sends()
            if self._has_backward and self.scale_grads:
                stage.scale_grads(self._n_microbatches)
        if not last:
            return None
        if losses is not None:
            losses.clear()
            losses.extend(mb_losses[i] for i in sorted(mb_losses))
        chunks = last[0].output_chunks
        if self._has_backward:
            chunks = [_detached(c) for c in chunks]
        return merge_chunks(chunks, self._output_merge_spec) if return_outputs else None


def _detached(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value.detach() if isinstance(value, ember.Tensor) else value


class PipelineScheduleSingle(_PipelineSchedule):
    """A schedule with one stage on each rank."""

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)
        self._stage = stage
        self._num_stages = stage.num_stages

    def step(self, *args, target=None, losses=None, return_outputs=True, loss_kwargs=None,
             **kwargs):
        """One training (or, without ``loss_fn``, inference) step over the whole batch."""
        if loss_kwargs:
            raise NotImplementedError("pipelining: loss_kwargs is not supported")
        order = self._order(self._stage.stage_index, self._n_microbatches)
        return self._run([self._stage], [(k, self._stage, mb) for k, mb in order], args,
                         kwargs, target, losses, return_outputs)


class ScheduleGPipe(PipelineScheduleSingle):
    """Every microbatch forward, then every microbatch backward."""

    def _order(self, stage_index, n):
        order = [(_F, mb) for mb in range(n)]
        return order + [(_B, mb) for mb in range(n)] if self._has_backward else order


class Schedule1F1B(PipelineScheduleSingle):
    """A few forwards to fill the pipe, then one forward and one backward alternately,
    then the remaining backwards; at most ``num_stages - stage_index`` microbatches'
    activations are alive at once."""

    def __init__(self, stage, n_microbatches, *args, **kwargs):
        super().__init__(stage, n_microbatches, *args, **kwargs)
        if n_microbatches < self._num_stages:
            raise ValueError(f"Number of microbatches ({n_microbatches}) must be greater "
                             f"than or equal to the number of stages ({self._num_stages}).")

    def _order(self, stage_index, n):
        if not self._has_backward:
            return [(_F, mb) for mb in range(n)]
        warmup = min(self._num_stages - 1 - stage_index, n)
        order = [(_F, mb) for mb in range(warmup)]
        for i in range(n - warmup):
            order += [(_F, warmup + i), (_B, i)]
        return order + [(_B, mb) for mb in range(n - warmup, n)]


class PipelineScheduleMulti(_PipelineSchedule):
    """A schedule with several stages on each rank (stage ``s`` on group rank
    ``s % group_size``)."""

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, use_full_backward=None,
                 scale_grads=True, backward_requires_autograd=True):
        super().__init__(n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)
        if not stages:
            raise ValueError("PipelineScheduleMulti needs at least one stage")
        self._stages = list(stages)
        self._num_stages = stages[0].num_stages
        self.pp_group_size = stages[0].group_size
        rank = stages[0].group_rank
        for s in self._stages:
            if s.num_stages != self._num_stages:
                raise ValueError("all stages of a schedule must agree on num_stages")
            if s.stage_index % self.pp_group_size != rank:
                raise ValueError(f"stage {s.stage_index} does not belong to group rank "
                                 f"{rank} (stage s runs on rank s % {self.pp_group_size})")

    def step(self, *args, target=None, losses=None, return_outputs=True, loss_kwargs=None,
             **kwargs):
        """One step; stages are looked up by their index in the generated order."""
        if loss_kwargs:
            raise NotImplementedError("pipelining: loss_kwargs is not supported")
        by_index = {s.stage_index: s for s in self._stages}
        order = [(k, by_index[s], mb) for k, s, mb in self._order()]
        return self._run(self._stages, order, args, kwargs, target, losses,
                         return_outputs)


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Breadth first: each local stage runs every microbatch forward in turn, then the
    backwards run in reverse stage order."""

    def __init__(self, stages, n_microbatches, loss_fn=None, output_merge_spec=None,
                 scale_grads=True, backward_requires_autograd=True, defer_pp_recv=False):
        super().__init__(stages, n_microbatches, loss_fn,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)

    def _order(self):
        n = self._n_microbatches
        mine = sorted(s.stage_index for s in self._stages)
        order = [(_F, s, mb) for s in mine for mb in range(n)]
        if self._has_backward:
            order += [(_B, s, mb) for s in reversed(mine) for mb in range(n)]
        return order


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """1F1B over several stages per rank: microbatches go through the local stages in
    rounds of ``group_size`` (Megatron's interleaving), and a rank runs a ready backward
    before any forward. The per-rank order comes from simulating every rank step by step,
    so it respects every data dependency and cannot deadlock, for any ``n_microbatches``."""

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True,
                 backward_requires_autograd=True, defer_pp_recv=False):
        super().__init__(stages, n_microbatches, loss_fn, args_chunk_spec,
                         kwargs_chunk_spec, output_merge_spec, scale_grads=scale_grads)

    def _order(self):
        orders = _simulate_interleaved(self._num_stages, self.pp_group_size,
                                       self._n_microbatches, self._has_backward)
        return orders[self._stages[0].group_rank]


def _simulate_interleaved(n_stages, p, n, backward):
    """{rank: [(F or B, stage, microbatch)]}: every rank runs one ready unit per tick,
    backwards first, forwards in rounds of ``p`` microbatches through its stages."""
    def f_key(unit):
        stage, mb = unit
        return (mb // p, stage, mb)

    def b_key(unit):
        stage, mb = unit
        return (mb // p, -stage, mb)
    todo_f = {r: sorted(((s, mb) for s in range(r, n_stages, p) for mb in range(n)),
                        key=f_key) for r in range(p)}
    todo_b = {r: sorted(((s, mb) for s in range(r, n_stages, p) for mb in range(n)),
                        key=b_key) if backward else [] for r in range(p)}
    done, orders = set(), {r: [] for r in range(p)}

    def ready(kind, stage, mb):
        if kind == _F:
            return (stage == 0 or (_F, stage - 1, mb) in done) and \
                (mb == 0 or (_F, stage, mb - 1) in done)
        return (_F, stage, mb) in done and \
            (stage == n_stages - 1 or (_B, stage + 1, mb) in done) and \
            (mb == 0 or (_B, stage, mb - 1) in done)
    while any(todo_f.values()) or any(todo_b.values()):
        finished = []
        for r in range(p):
            pick = next(((_B,) + u for u in todo_b[r] if ready(_B, *u)), None) or \
                next(((_F,) + u for u in todo_f[r] if ready(_F, *u)), None)
            if pick is not None:
                (todo_b if pick[0] == _B else todo_f)[r].remove(pick[1:])
                orders[r].append(pick)
                finished.append(pick)
        if not finished:
            raise RuntimeError("pipelining: no runnable unit in the interleaved schedule")
        done.update(finished)
    return orders


__all__ = ["PipelineScheduleSingle", "PipelineScheduleMulti", "ScheduleGPipe",
           "Schedule1F1B", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
           "TensorChunkSpec"]
