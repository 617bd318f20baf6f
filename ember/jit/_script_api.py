"""Names of ``ember.jit`` that scripted code treats as builtins (filled by ``__init__``)."""
JIT_BUILTINS: dict = {}
