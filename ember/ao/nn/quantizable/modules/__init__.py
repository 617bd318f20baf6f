"""torch.ao.nn.quantizable.modules: LSTM, LSTMCell, MultiheadAttention."""
from ember.ao.nn.quantizable.modules.rnn import LSTM, LSTMCell  # noqa: F401
from ember.ao.nn.quantizable.modules.activation import MultiheadAttention  # noqa: F401

__all__ = ["LSTM", "LSTMCell", "MultiheadAttention"]
