"""Collectives that autograd differentiates (``torch.distributed.nn.functional``).

Each is the collective of ``ember.distributed`` on copies of its inputs (the inputs are
left as they are) with its adjoint as backward: a broadcast's gradient is reduced to the
source, an all-gather's is reduce-scattered, a scatter's gathered, and so on.
``all_reduce``'s backward all-reduces the gradients with the same ``op``.
"""
from __future__ import annotations

import ember
from ember import distributed as dist
from ember.autograd import Function
from ember.distributed import ReduceOp, group  # noqa: F401 - torch's module exports them

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce"]


def _me(group):
    return dist.get_rank(group)


def _ranks(group):
    return dist.get_world_size(group)


def _zeros_like(tensors):
    return [ember.zeros_like(t) for t in tensors]


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone()
        dist.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        summed = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad)
        if dist.get_rank() != ctx.src:
            summed = ember.zeros_like(grad)
        return None, None, summed


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        dist.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad)


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone()
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        outs = _zeros_like([tensor] * _ranks(group))
        dist.all_gather(outs, tensor.contiguous(), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        out = ember.zeros_like(grads[_me(ctx.group)])
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, out, *grads)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        out = output.clone()
        dist.reduce_scatter(out, [t.contiguous() for t in inputs], op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None) + _AllGather.apply(ctx.group, grad)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        outs = _zeros_like([tensor] * _ranks(group))
        mine = dist.get_rank() == dst
        dist.gather(tensor.contiguous(), outs if mine else None, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grads)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        if any(t.shape != tensors[0].shape for t in tensors):
            raise ValueError(f"scatter: every tensor must have the same shape, got "
                             f"{[tuple(t.shape) for t in tensors]}")
        out = ember.zeros_like(tensors[dist.get_rank(group)])
        mine = dist.get_rank() == src
        dist.scatter(out, [t.contiguous() for t in tensors] if mine else None, src,
                     group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, outputs, *inputs):
        ctx.group = group
        ctx.input_shapes = [t.shape for t in inputs]
        outs = [t.clone() for t in outputs]
        dist.all_to_all(outs, [t.contiguous() for t in inputs], group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        back = [ember.zeros(s, dtype=grads[0].dtype) for s in ctx.input_shapes]
        return (None, None) + _AllToAll.apply(ctx.group, back, *grads)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group, ctx.input_shape = group, input.shape
        ctx.splits = (output_split_sizes, input_split_sizes)
        out = output.clone()
        dist.all_to_all_single(out, input.contiguous(), output_split_sizes,
                               input_split_sizes, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        out_splits, in_splits = ctx.splits
        back = ember.zeros(ctx.input_shape, dtype=grad.dtype)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, back, in_splits, out_splits,
                                      grad.contiguous()))


def broadcast(tensor, src, group=group.WORLD):
    """``tensor`` of rank ``src`` on every rank; gradients are summed back to ``src``."""
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=group.WORLD):
    """The tensors of every rank, as a tuple on ``dst`` (zeros elsewhere)."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=group.WORLD):
    """Rank ``i``'s tensor is ``tensors[i]`` of rank ``src``."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=group.WORLD):
    """``tensor`` reduced over the ranks, on ``dst``."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=group.WORLD):
    """Rank ``i`` gets ``input_list[i]`` reduced over the ranks (shaped like ``output``)."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=group.WORLD):
    """The tensors of every rank, as a tuple on every rank."""
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=group.WORLD):
    """Rank ``i``'s ``input_tensor_list[j]`` becomes rank ``j``'s output ``i``."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=group.WORLD):
    """``all_to_all`` of the pieces of one tensor split along dimension 0."""
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=group.WORLD):
    """``tensor`` reduced over the ranks, on every rank."""
    return _AllReduce.apply(op, group, tensor)
