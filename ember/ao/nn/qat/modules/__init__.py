"""torch.ao.nn.qat.modules: each file's modules, imported here."""
from ember.ao.nn.qat.modules.linear import Linear  # noqa: F401
from ember.ao.nn.qat.modules.conv import Conv1d, Conv2d, Conv3d  # noqa: F401
from ember.ao.nn.qat.modules.embedding_ops import Embedding, EmbeddingBag  # noqa: F401
