"""torch.functional: the module that holds some of torch's top-level functions; here the
same function objects as ``ember.<name>``."""
import ember as _ember

# alphabetical: the tensor-shape helpers, decompositions and transforms torch keeps there
__all__ = sorted("""
    atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors
    cartesian_prod cdist chain_matmul einsum istft lu meshgrid norm pca_lowrank split stft
    svd_lowrank tensordot unique unique_consecutive unravel_index""".split())

globals().update({name: getattr(_ember, name) for name in __all__})
