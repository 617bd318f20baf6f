"""Batch normalization: normalize each channel (dim 1) of ``(N, C, *)`` with the batch's
mean and biased variance while training (updating ``running_mean`` / unbiased
``running_var``), and with the running estimates in eval mode."""
import ember
from ember.nn import functional as F, init
from ember.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter
from ember.nn.modules.module import Module
from ember.nn.modules.lazy import LazyModuleMixin

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d",
           "BatchNorm3d", "LazyBatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Per-channel affine ``weight``/``bias`` (ones/zeros) and the running-stat buffers
    ``running_mean``, ``running_var``, ``num_batches_tracked``. ``_input_dims`` lists
    the accepted input ranks."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]
    _input_dims = ()

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        make = lambda: Parameter(ember.empty(num_features, device=device, dtype=dtype))
        self.register_parameter("weight", make() if affine else None)
        self.register_parameter("bias", make() if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 ember.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 ember.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 ember.tensor(0, dtype=ember.long, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Mean 0, variance 1, no batches seen (when running stats are tracked)."""
        if not self.track_running_stats:
            return
        for name, start in (("running_mean", 0), ("running_var", 1), ("num_batches_tracked", 0)):
            getattr(self, name).fill_(start)

    def reset_parameters(self):
        """Running stats reset; the affine transform starts as the identity."""
        self.reset_running_stats()
        for tensor, start in ((self.weight, 1.0), (self.bias, 0.0)):
            if tensor is not None:
                init.constant_(tensor, start)

    def _check_input_dim(self, input):
        if input.dim() not in self._input_dims:
            ranks = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"expected {ranks} input (got {input.dim()}D input)")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        # state dicts older than version 2 have no num_batches_tracked: start it at 0
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats \
                and key not in state_dict:
            count = self.num_batches_tracked
            state_dict[key] = count if count is not None else ember.tensor(0, dtype=ember.long)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    """Shared forward; ``momentum=None`` uses a cumulative average of the batches."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        # batch statistics while training, or in eval when there are no running buffers;
        # the buffers are passed only when they are read or should be updated
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        pass_buffers = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if pass_buffers else None,
                            self.running_var if pass_buffers else None, self.weight,
                            self.bias, use_batch, factor, self.eps)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """``num_features`` is read from ``input.shape[1]`` on the first call."""

    def __init__(self, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.long, device=device)

    def reset_parameters(self):
        # nothing to reset before the first input fixed num_features
        if self.num_features and not self.has_uninitialized_params():
            _NormBase.reset_parameters(self)

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None and hasattr(t, "materialize"):
                t.materialize((self.num_features,))
        self.reset_parameters()


class BatchNorm1d(_BatchNorm):
    """Input ``(N, C)`` or ``(N, C, L)``."""
    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Input ``(N, C, H, W)``."""
    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Input ``(N, C, D, H, W)``."""
    _input_dims = (5,)


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm1d
    _input_dims = (2, 3)


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm2d
    _input_dims = (4,)


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm3d
    _input_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch norm over a process group; ember runs one process, so this is a plain
    ``_BatchNorm`` over inputs ``(N, C, *)``."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every ``_BatchNorm`` in ``module`` (recursively) by a ``SyncBatchNorm``
        sharing its parameters and buffers."""
        result = module
        if isinstance(module, _BatchNorm):
            options = {k: getattr(module, k)
                       for k in ("eps", "momentum", "affine", "track_running_stats")}
            result = cls(module.num_features, process_group=process_group,
                         bias=module.bias is not None, **options)
            if module.affine:
                result.weight, result.bias = module.weight, module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(result, name, getattr(module, name))
            result.training = module.training
            if hasattr(module, "qconfig"):
                result.qconfig = module.qconfig
        for name, child in module.named_children():
            result.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return result
