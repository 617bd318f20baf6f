"""Composable function transforms (torch.func / functorch): vmap, grad, vjp, jvp,
linearize, jacrev, jacfwd, hessian, functional_call, stack_module_state, functionalize
(``_functionalize.py``), replace_all_batch_norm_modules_; and functorch's
legacy make_functional, make_functional_with_buffers, combine_state_for_ensemble
(``_functorch.py``; ``python -m ember.run`` maps ``functorch`` here).

vmap is a dispatcher mode (``_vmap.py``) using the op records' batching rules
(``_batch_rules.py``, registered here at import); the differentiation transforms
(``_transforms.py``) run on ember's autograd engine.
"""
from ember.func import _batch_rules
from ember.func._vmap import vmap, BatchedTensor, FALLBACK_COUNTS, RULE_COUNTS, \
    DECOMPOSED_COUNTS
from ember.func._transforms import (grad, grad_and_value, vjp, jvp, linearize, jacrev,
                                    jacfwd, hessian, functional_call, stack_module_state)
from ember.func._functorch import (make_functional, make_functional_with_buffers,
                                   combine_state_for_ensemble, replace_all_batch_norm_modules_)
from ember.func._functionalize import functionalize

_batch_rules.register_all()

vmap_fallback_counts = FALLBACK_COUNTS

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_"]
