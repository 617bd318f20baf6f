"""torch.ao.nn.quantized.dynamic.modules: each file's modules, imported here."""
from ember.ao.nn.quantized.dynamic.modules.rnn import (  # noqa: F401
    LSTM, GRU, LSTMCell, RNNCell, GRUCell)
from ember.ao.nn.quantized.dynamic.modules.linear import Linear  # noqa: F401
from ember.ao.nn.quantized.dynamic.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
