"""Averaging parameters over a process group."""
from __future__ import annotations

__all__ = ["average_parameters", "get_params_to_average",
           "average_parameters_or_parameter_groups"]


def average_parameters(params, process_group=None):
    """Replace each parameter by its mean over ``process_group`` (one all-reduce of them
    all, flattened; per dtype). Ranks outside the group do nothing."""
    import ember
    import ember.distributed as dist
    group = process_group if process_group is not None else dist.group.WORLD
    if dist.get_rank(group) < 0:
        return
    params = list(params)
    by_dtype = {}
    for p in params:
        by_dtype.setdefault(p.dtype, []).append(p)
    size = dist.get_world_size(group)
    with ember.no_grad():
        for group_params in by_dtype.values():
            flat = ember.cat([p.detach().reshape(-1) for p in group_params]) / size
            dist.all_reduce(flat, group=group)
            at = 0
            for p in group_params:
                n = p.numel()
                p.copy_(flat[at:at + n].view(p.shape))
                at += n


def get_params_to_average(params):
    """The parameters (from ``model.parameters()`` or an optimizer's ``param_groups``) that
    have a gradient."""
    from ember.nn.parameter import Parameter
    out = []
    for item in params:
        if isinstance(item, Parameter):
            if item.grad is not None:
                out.append(item)
        elif isinstance(item, dict):
            out.extend(p for p in item["params"] if p.grad is not None)
        else:
            raise NotImplementedError(f"Parameter input of type {type(item)} is not "
                                      f"supported")
    return out


def average_parameters_or_parameter_groups(params, process_group=None):
    """``average_parameters`` over ``get_params_to_average(params)``."""
    average_parameters(iter(get_params_to_average(params)), process_group)
