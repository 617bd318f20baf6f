"""One pipeline stage: a submodule, where it sits in the pipeline, and the point-to-point
traffic with its neighbours.

Stage ``s`` lives on group rank ``s % group_size``. Forward: a stage receives its inputs
from stage ``s - 1`` (a small int64 header with dtypes and shapes, then each tensor), runs
its submodule and sends the outputs to ``s + 1``. Backward: it receives the gradients of
its floating-point outputs from ``s + 1``, runs autograd (parameters accumulate ``.grad``)
and sends its inputs' gradients to ``s - 1``. Sends are nonblocking (waited at the end of
a step), receives block, so any order the schedules use that respects data flow finishes.
Messages carry the tag ``2 * receiving stage + direction + 1``; MPI keeps messages of one
tag between two ranks in order, which is microbatch order.
"""
from collections import defaultdict, deque

import ember
import ember.distributed as dist
from ember.distributed.pipelining._utils import (HEADER_LEN, PipeInfo,
                                                 PipeliningMetadataError, decode_header,
                                                 encode_header, flatten_tensors, needs_grad)

_FWD, _BWD = 0, 1
_LOCAL = defaultdict(deque)     # messages between two stages of one process


def _tag(stage_index, direction):
    return 2 * stage_index + direction + 1


class _PipelineStageBase:
    """Common state of a stage; ``PipelineStage`` is the one users build."""

    def __init__(self, submodule, stage_index, num_stages, device, group=None):
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"Stage index {stage_index} is out of range of {num_stages}")
        self.submod = submodule
        self.stage_index, self.num_stages = stage_index, num_stages
        self.device = ember.device(device if device is not None else "cpu")
        if self.device.type != "cpu":
            raise NotImplementedError(f"pipelining: ember stages run on the CPU, not "
                                      f"{self.device}")
        self.group = group
        self.group_rank = dist.get_rank(group)
        self.group_size = dist.get_world_size(group)
        if self.group_size > num_stages:
            raise RuntimeError(f"Pipeline group size {self.group_size} cannot be larger "
                               f"than number of stages {num_stages}")
        self.stage_index_to_group_rank = {s: s % self.group_size for s in range(num_stages)}
        self.has_backward = False
        self.inputs_meta = None
        self.clear_runtime_states()

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1

    def clear_runtime_states(self):
        """Forget the previous step's saved activations, outputs, pending sends and
        in-memory messages to this stage (left over when a step failed)."""
        self.fwd_cache = {}
        self.output_chunks = []
        self._sends = []
        for direction in (_FWD, _BWD):
            _LOCAL.pop((id(self.group), _tag(self.stage_index, direction)), None)

    def __repr__(self):
        return (f"PipelineStage(stage_index={self.stage_index}, num_stages="
                f"{self.num_stages}, group_rank={self.group_rank})")

    # ------------------------------------------------------------ point to point
    def _peer_rank(self, stage_index):
        return self.stage_index_to_group_rank[stage_index]

    def _send(self, tensors, stage_index, direction):
        peer, tag = self._peer_rank(stage_index), _tag(stage_index, direction)
        if peer == self.group_rank:
            _LOCAL[(id(self.group), tag)].extend(t.detach().clone() for t in tensors)
            return
        for t in tensors:
            t = t.detach().contiguous()
            self._sends.append(dist.isend(t, group=self.group, tag=tag, group_dst=peer))

    def _recv(self, buffers, stage_index, direction):
        """Fill ``buffers`` with what stage ``stage_index``'s neighbour sent."""
        peer, tag = self._peer_rank(stage_index - 1 if direction == _FWD
                                    else stage_index + 1), _tag(stage_index, direction)
        if peer == self.group_rank:
            box = _LOCAL[(id(self.group), tag)]
            for b in buffers:
                b.copy_(box.popleft())
            return
        works = [dist.irecv(b, group=self.group, tag=tag, group_src=peer) for b in buffers]
        for w in works:
            w.wait()

    def wait_sends(self):
        """Wait for every send of this step (the tensors stay alive until then)."""
        for w in self._sends:
            w.wait()
        self._sends = []

    def _recv_activations(self):
        header = ember.empty(HEADER_LEN, dtype=ember.int64)
        with ember.no_grad():
            self._recv([header], self.stage_index, _FWD)
            metas = decode_header(header)
            tensors = [ember.empty(shape, dtype=dtype) for shape, dtype in metas]
            self._recv(tensors, self.stage_index, _FWD)
        self._check_inputs(metas)     # after receiving, so the sender is not left waiting
        if self.has_backward:
            for t in tensors:
                if needs_grad(t):
                    t.requires_grad_(True)
        return tuple(tensors)

    def _check_inputs(self, metas):
        _check_meta(metas, self.inputs_meta, f"Stage {self.stage_index}: received inputs",
                    "input_args")

    def _check_outputs(self, flat):
        _check_meta([(t.shape, t.dtype) for t in flat], self.outputs_meta,
                    f"Stage {self.stage_index}: outputs", "output_args")

    # ------------------------------------------------------------ compute
    def forward_one_chunk(self, fwd_chunk_id, args=(), kwargs=None):
        """Run microbatch ``fwd_chunk_id`` through the submodule (the first stage gets
        ``args``/``kwargs``, the others receive theirs) and send the outputs on."""
        if self.is_first:
            inputs = ()
        else:
            inputs = args = self._recv_activations()
        ddp = self._ddp()
        if ddp is not None:             # DDP syncs once per step, in the last backward
            with ddp.no_sync():
                output = self.submod(*args, **(kwargs or {}))
        else:
            output = self.submod(*args, **(kwargs or {}))
        flat = ()                       # the last stage's output may be anything
        if not self.is_last:
            flat = flatten_tensors(output, f"Stage {self.stage_index} output")
            self._check_outputs(flat)
            with ember.no_grad():
                self._send((encode_header(flat),) + flat, self.stage_index + 1, _FWD)
        if self.has_backward:
            self.fwd_cache[fwd_chunk_id] = (flat, inputs)
        if self.is_last:
            self.output_chunks.append(output)
        return output

    def _ddp(self):
        from ember.nn.parallel import DistributedDataParallel
        return self.submod if isinstance(self.submod, DistributedDataParallel) else None

    def _run_backward(self, roots, grads, last_backward):
        """Autograd from ``roots``; a DDP submodule all-reduces only in the step's last
        backward (the gradients summed over every microbatch)."""
        ddp = self._ddp()
        if ddp is None:
            ember.autograd.backward(roots, grads)
        elif last_backward:
            ddp._prepare_for_backward(roots)
            ember.autograd.backward(roots, grads)
        else:
            with ddp.no_sync():
                ember.autograd.backward(roots, grads)

    def backward_one_chunk(self, bwd_chunk_id, loss=None, last_backward=False):
        """Backward of microbatch ``bwd_chunk_id``: from ``loss`` on the last stage, else
        from the output gradients the next stage sends; sends the input gradients back.
        ``last_backward``: the step's last backward on this stage."""
        flat, inputs = self.fwd_cache.pop(bwd_chunk_id)
        if self.is_last:
            roots, grads = [loss], None
        else:
            outs = [t for t in flat if needs_grad(t)]
            received = [ember.empty(t.shape, dtype=t.dtype) for t in outs]
            self._recv(received, self.stage_index, _BWD)
            pairs = [(o, g) for o, g in zip(outs, received) if o.requires_grad]
            roots, grads = [o for o, _ in pairs], [g for _, g in pairs]
        if roots:
            self._run_backward(roots, grads, last_backward)
        if not self.is_first:
            back = [t.grad if t.grad is not None else ember.zeros_like(t)
                    for t in inputs if needs_grad(t)]
            self._send(back, self.stage_index - 1, _BWD)

    def scale_grads(self, grad_scale_factor):
        """Divide every parameter gradient of the submodule by ``grad_scale_factor``."""
        if grad_scale_factor != 1:
            with ember.no_grad():
                for p in self.submod.parameters():
                    if p.grad is not None:
                        p.grad.div_(grad_scale_factor)


def _check_meta(metas, expected, what, name):
    """``metas`` [(shape, dtype)] against the example tensors ``expected`` (None: no
    check): dtypes and all but the batch dimension must agree."""
    if expected is None:
        return
    if len(metas) != len(expected) or any(
            dtype != want.dtype or tuple(shape[1:]) != tuple(want.shape[1:])
            for (shape, dtype), want in zip(metas, expected)):
        got = [(list(s), str(d)) for s, d in metas]
        want = [(list(t.shape), str(t.dtype)) for t in expected]
        raise PipeliningMetadataError(
            f"{what} {got} do not match {name} {want} (dtypes and all but the batch "
            f"dimension must agree)")


class PipelineStage(_PipelineStageBase):
    """``PipelineStage(submodule, stage_index, num_stages, device, input_args=None,
    output_args=None, group=None)``: ``submodule`` is this rank's part of the model.
    Shapes between stages travel with the activations, so ``input_args``/``output_args``
    are optional; given, the received inputs / produced outputs are checked against them
    (dtypes and all but the batch dimension)."""

    def __init__(self, submodule, stage_index, num_stages, device, input_args=None,
                 output_args=None, output_grads=None, input_grads=None, group=None,
                 dw_builder=None, get_mesh=None):
        super().__init__(submodule, stage_index, num_stages, device, group)
        if dw_builder is not None:
            raise NotImplementedError("pipelining: dw_builder (split weight backward) is "
                                      "not supported")
        if input_args is not None:
            self.inputs_meta = flatten_tensors(input_args, f"Stage {stage_index} input_args")
        self.outputs_meta = (None if output_args is None else
                             flatten_tensors(output_args, f"Stage {stage_index} output_args"))


def build_stage(stage_module, stage_index, pipe_info, device, group=None):
    """The stage for ``stage_module`` of a traced ``Pipe`` (``pipe_info`` is ``pipe.info()``)."""
    if not isinstance(pipe_info, PipeInfo):
        raise TypeError(f"build_stage expects a PipeInfo, got {type(pipe_info).__name__}")
    return PipelineStage(stage_module, stage_index, pipe_info.num_stages, device,
                         group=group)
