"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016).

Classes ``[0, cutoffs[0])`` (the shortlist) are scored by ``head`` directly; each further
cluster ``[cutoffs[i], cutoffs[i+1])`` gets one head logit and its own two-layer ``tail[i]``
(in_features -> in_features // div_value**(i+1) -> cluster size). log p(class) = head log
prob of its shortlist slot or cluster + the cluster's own log-softmax.
Shapes: input (N, in_features) or (in_features,), target (N,) or () -> output like target.
"""
from collections import namedtuple

import ember
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _valid_cutoffs(cutoffs, n_classes):
    return (cutoffs == sorted(cutoffs) and min(cutoffs) > 0 and max(cutoffs) <= n_classes - 1
            and len(set(cutoffs)) == len(cutoffs) and all(int(c) == c for c in cutoffs))


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if not _valid_cutoffs(cutoffs, n_classes):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for first, second in self.tail:
            first.reset_parameters()
            second.reset_parameters()

    def _check(self, input, target):
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input, target):
        """-> _ASMoutput(output: log p(target) per row, loss: mean of -output)."""
        self._check(input, target)
        unbatched = target.dim() == 0
        if unbatched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        batch = target.size(0)
        output = input.new_zeros(batch)
        head_slot = target.clone()    # the head column each row reads: class or cluster
        used = 0
        for i, (low, high) in enumerate(zip([0] + self.cutoffs[:-1], self.cutoffs)):
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            used += rows.numel()
            if i == 0:
                continue
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), 1)
            local = cluster_logprob.gather(1, (target[mask] - low).unsqueeze(1)).squeeze(1)
            output = output.index_copy(0, rows, local)
            head_slot = head_slot.index_fill(0, rows, self.shortlist_size + i - 1)
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), 1)
        output = output + head_logprob.gather(1, head_slot.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if unbatched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return ember.cat(parts, 1)

    def log_prob(self, input):
        """(N, in_features) -> (N, n_classes) log-probabilities of every class."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """(N, in_features) -> (N,) most likely class (full log_prob only where needed)."""
        head_output = self.head(input)
        output = ember.argmax(head_output, dim=1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        rows = outside.nonzero().squeeze(1)
        full = self._full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows))
        return output.index_copy(0, rows, ember.argmax(full, dim=1))
