"""torch.ao.nn.qat.dynamic.modules: each file's modules, imported here."""
from ember.ao.nn.qat.dynamic.modules.linear import Linear  # noqa: F401
