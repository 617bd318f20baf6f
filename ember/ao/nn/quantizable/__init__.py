"""torch.ao.nn.quantizable: float modules written so eager quantization can observe and
convert them (LSTM, MultiheadAttention); ``ember.nn.quantizable`` is its alias."""
from ember.ao.nn.quantizable.modules import *  # noqa: F401,F403
from ember.ao.nn.quantizable.modules import __all__  # noqa: F401
from ember.ao.nn.quantizable import modules  # noqa: F401
