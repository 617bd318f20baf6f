"""torch.ao.nn.quantized.dynamic.modules: each file's modules, imported here."""
from ember.ao.nn.quantized.dynamic.modules.rnn import (  # noqa: F401
    LSTM, GRU, LSTMCell, RNNCell, GRUCell)
