"""DDP communication hooks (``ddp_model.register_comm_hook(state, hook)``) and
``register_ddp_comm_hook(DDPCommHookType.X, model, state)`` for the built-in ones."""
from __future__ import annotations

from enum import Enum
from functools import partial

from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as default
from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


def _powerSGD_comm_hook_wrapper(comm_hook, model, state, matrix_approximation_rank):
    """``state`` is the process group; PowerSGD starts after 1000 iterations."""
    powerSGD_state = powerSGD.PowerSGDState(process_group=state,
                                            matrix_approximation_rank=matrix_approximation_rank)
    model.register_comm_hook(powerSGD_state, comm_hook)


def _noop_hook(_, bucket):
    """No communication: the bucket as it is (to measure everything but the all-reduce)."""
    from ember.futures import Future
    fut = Future()
    fut.set_result(bucket.buffer())
    return fut


def _quantization_hook(*args):
    raise NotImplementedError("ember does not implement DDP's quantization comm hooks "
                              "(QUANTIZE_PER_TENSOR / QUANTIZE_PER_CHANNEL)")


def _member(fn):
    # a partial in an Enum body would be taken for a method, not a member
    from enum import member
    return member(fn)


class DDPCommHookType(Enum):
    """The built-in hooks by name; ``register_ddp_comm_hook`` registers one on a model."""
    ALLREDUCE = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper,
                                    comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper,
                                    comm_hook=default.bf16_compress_hook))
    QUANTIZE_PER_TENSOR = _member(partial(_ddp_comm_hook_wrapper,
                                          comm_hook=_quantization_hook))
    QUANTIZE_PER_CHANNEL = _member(partial(_ddp_comm_hook_wrapper,
                                           comm_hook=_quantization_hook))
    POWER_SGD = _member(partial(_powerSGD_comm_hook_wrapper,
                                comm_hook=powerSGD.powerSGD_hook, matrix_approximation_rank=1))
    POWER_SGD_RANK2 = _member(partial(_powerSGD_comm_hook_wrapper,
                                      comm_hook=powerSGD.powerSGD_hook,
                                      matrix_approximation_rank=2))
    BATCHED_POWER_SGD = _member(partial(_powerSGD_comm_hook_wrapper,
                                        comm_hook=powerSGD.batched_powerSGD_hook,
                                        matrix_approximation_rank=1))
    BATCHED_POWER_SGD_RANK2 = _member(partial(_powerSGD_comm_hook_wrapper,
                                              comm_hook=powerSGD.batched_powerSGD_hook,
                                              matrix_approximation_rank=2))
    NOOP = _member(partial(_ddp_comm_hook_wrapper, comm_hook=_noop_hook))


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook ``comm_hook_type`` names on the DDP ``model`` (``state``: the
    process group, None for the world)."""
    comm_hook_type.value(model=model, state=state)
