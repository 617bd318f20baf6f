"""Composable function transforms (torch.func / functorch): vmap, grad, vjp, jvp,
linearize, jacrev, jacfwd, hessian, functional_call, stack_module_state, functionalize
(``_functionalize.py``), rearrange (``_rearrange.py``), replace_all_batch_norm_modules_,
debug_unwrap; and functorch's
legacy make_functional, make_functional_with_buffers, combine_state_for_ensemble
(``_functorch.py``; ``python -m ember.run`` maps ``functorch`` here).

vmap is a dispatcher mode (``_vmap.py``) using the op records' batching rules
(``_batch_rules.py``, registered here at import); the differentiation transforms
(``_transforms.py``) run on ember's autograd engine.
"""
from ember.func import _batch_rules, _vmap
from ember.func._vmap import vmap, BatchedTensor, FALLBACK_COUNTS, RULE_COUNTS, \
    DECOMPOSED_COUNTS
from ember.func._transforms import (grad, grad_and_value, vjp, jvp, linearize, jacrev,
                                    jacfwd, hessian, functional_call, stack_module_state)
from ember.func._functorch import (make_functional, make_functional_with_buffers,
                                   combine_state_for_ensemble, replace_all_batch_norm_modules_)
from ember.func._functionalize import functionalize
from ember.func._rearrange import rearrange

_batch_rules.register_all()

vmap_fallback_counts = FALLBACK_COUNTS

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "rearrange", "debug_unwrap"]


def debug_unwrap(tensor, *, recurse=True):
    """For debugging inside a transform: the tensor under ``tensor``'s vmap wrapper (one
    level with ``recurse=False``, else all of them); a plain tensor is returned as is."""
    if type(tensor) is not BatchedTensor:
        return tensor
    return _vmap.bottom(tensor) if recurse else tensor._value
