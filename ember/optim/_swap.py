"""Run an optimizer for a while on other parameter tensors and another state."""
import contextlib

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the ``with`` block, ``optimizer`` acts on other tensors and state.

    ``swapin_parameters``: a dict (e.g. ``{name: tensor}`` in ``named_parameters`` order)
    whose values replace the optimizer's parameters, group by group in order.
    ``swapin_optim_state``: shaped like ``optimizer.state_dict()``; its ``state`` (keyed by
    packed index) becomes the parameters' state, its ``param_groups`` the groups' options.
    Per-parameter state dicts are shallow copies: in-place edits of their tensors reach the
    caller, new entries do not.  The live parameters, groups and state come back on exit
    (also on an exception).  The optimizer must have state already (it has stepped).
    """
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    saved_groups = swapin_optim_state.get("param_groups")
    if not isinstance(saved_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(saved_groups).__name__}.")
    tensors = list(swapin_parameters.values())
    sizes = [len(group["params"]) for group in optimizer.param_groups]
    if len(saved_groups) != len(sizes) or len(tensors) != sum(sizes) or \
            any(len(s["params"]) != n for s, n in zip(saved_groups, sizes)):
        raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                           "optimizer.param_groups ordering.")
    saved_state = swapin_optim_state.get("state", {})
    groups, state, start = [], {}, 0
    for live, saved, n in zip(optimizer.param_groups, saved_groups, sizes):
        params = tensors[start:start + n]
        start += n
        groups.append({**live, **saved, "params": params})
        for index, p in zip(saved["params"], params):
            if index in saved_state:
                state[p] = dict(saved_state[index])
    live_groups, live_state = optimizer.param_groups, optimizer.state
    optimizer.param_groups = groups
    optimizer.state = type(live_state)(dict, state)
    try:
        yield
    finally:
        optimizer.param_groups, optimizer.state = live_groups, live_state
