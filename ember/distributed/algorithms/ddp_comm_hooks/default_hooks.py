"""DDP communication hooks that all-reduce a bucket: as is, or compressed to float16 or
bfloat16 (and wrappers that compress around another hook)."""
from __future__ import annotations

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _group(process_group):
    import ember.distributed as dist
    return process_group if process_group is not None else dist.group.WORLD


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group in place; a Future of it."""
    import ember.distributed as dist
    group = _group(process_group)
    tensor.div_(dist.get_world_size(group))
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: the bucket averaged over ``process_group`` (the
    state; None means the world)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    import ember.distributed as dist
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(dist.get_world_size(group))
    work = dist.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """The bucket cast to float16, averaged, and cast back into the bucket."""
    import ember
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """The bucket cast to bfloat16, averaged, and cast back into the bucket."""
    import ember
    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        buffer = bucket.buffer()
        bucket.set_buffer(buffer.to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            value = fut.value()
            buffer.copy_(value[0] if isinstance(value, (list, tuple)) else value)
            return buffer
        return fut.then(decompress)
    return wrapped


def fp16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to float16; its result cast back."""
    import ember
    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to bfloat16; its result cast back."""
    import ember
    return _compress_wrapper(ember.bfloat16, hook)
