"""``ember.utils.deterministic`` (torch.utils.deterministic).

``fill_uninitialized_memory`` (default True): while deterministic algorithms are on
(``ember.use_deterministic_algorithms(True)``), ``empty``, ``empty_like``,
``empty_strided``, ``Tensor.new_empty`` fill their result with NaN (floating and complex
dtypes) or the dtype's maximum value (integers; True for bool), as torch does.
"""
fill_uninitialized_memory = True
