"""Instance normalization: normalize each (sample, channel) slice of ``(N, C, *S)`` (or
unbatched ``(C, *S)``) over its spatial dims. No affine parameters and no running
stats by default."""
import warnings

from ember.nn import functional as F
from ember.nn.modules.batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Subclasses set ``_dim``, the number of spatial dims, and ``_input_dims``, the
    accepted input ranks (unbatched and batched)."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _get_no_batch_dim(self):
        return self._dim + 1

    def _apply_instance_norm(self, input):
        batch_stats = self.training or not self.track_running_stats
        return F.instance_norm(input, running_mean=self.running_mean,
                               running_var=self.running_var, weight=self.weight, bias=self.bias,
                               use_input_stats=batch_stats, momentum=self.momentum or 0.0,
                               eps=self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        # running stats saved by a module that does not track them: report and drop
        stale = [prefix + n for n in ("running_mean", "running_var") if prefix + n in state_dict]
        if local_metadata.get("version") is None and not self.track_running_stats and stale:
            names = " and ".join(f'"{k}"' for k in stale)
            klass = type(self).__name__
            error_msgs.append(
                f"Unexpected running stats buffer(s) {names} for {klass} with "
                f"track_running_stats=False. If state_dict is a checkpoint saved before "
                f"0.4.0, this may be expected because {klass} does not track running stats "
                f"by default since 0.4.0. Please remove these keys from state_dict. If the "
                f"running stats are actually needed, instead set track_running_stats=True "
                f"in {klass} to enable them. See the documentation of {klass} for details.")
            for key in stale:
                del state_dict[key]
        _NormBase._load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.dim() == self._get_no_batch_dim()
        channel_dim = 0 if unbatched else 1
        if input.size(channel_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={channel_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(channel_dim)}.")
            warnings.warn(f"input's size at dim={channel_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False", stacklevel=2)
        if unbatched:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Input ``(N, C, L)`` or ``(C, L)``."""
    _dim, _input_dims = 1, (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Input ``(N, C, H, W)`` or ``(C, H, W)``."""
    _dim, _input_dims = 2, (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Input ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    _dim, _input_dims = 3, (4, 5)


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm1d
    _dim, _input_dims = 1, (2, 3)


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm2d
    _dim, _input_dims = 2, (3, 4)


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm3d
    _dim, _input_dims = 3, (4, 5)
