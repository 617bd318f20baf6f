"""Kernels: pure functions on NumPy arrays. Modules here import only NumPy (and SciPy where
a kernel needs it, lazily): no Tensor, no autograd. Contract: a kernel of a non-view op
returns a fresh array (never one of its inputs); a view op's kernel returns a NumPy view.
"""
