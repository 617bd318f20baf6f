"""Op records by family. Importing this package registers every op."""
from ember._ops import core  # noqa: F401
from ember._ops import factory  # noqa: F401
from ember._ops import conversion  # noqa: F401
from ember._ops import shared  # noqa: F401
from ember._ops import indexing  # noqa: F401
from ember._ops import blas  # noqa: F401
from ember._ops import elementwise  # noqa: F401
from ember._ops import reduction  # noqa: F401
from ember._ops import sorting  # noqa: F401
from ember._ops import shape  # noqa: F401
from ember._ops import random  # noqa: F401
from ember._ops import numeric  # noqa: F401
from ember._ops import nn_conv  # noqa: F401
from ember._ops import nn_norm  # noqa: F401
from ember._ops import nn_loss  # noqa: F401
from ember._ops import nn_activation  # noqa: F401
from ember._ops import fft  # noqa: F401
from ember._ops import linalg  # noqa: F401
from ember._ops import householder  # noqa: F401
from ember._ops import special  # noqa: F401
from ember._ops import complex  # noqa: F401
from ember._ops import spectral  # noqa: F401
from ember._ops import extra  # noqa: F401
from ember._ops import nn_fused  # noqa: F401
from ember._ops import fused_optim  # noqa: F401
from ember._ops import aten  # noqa: F401
from ember._ops import sparse  # noqa: F401
from ember._ops import quantized  # noqa: F401
from ember._ops import quantized_functional  # noqa: F401
from ember._ops import quantized_rnn  # noqa: F401
from ember._ops import quantized_linear  # noqa: F401
from ember._ops import quantized_conv  # noqa: F401
from ember._ops import quantized_embedding  # noqa: F401
from ember._ops import fake_quantize  # noqa: F401
from ember._ops import out_contracts  # noqa: E402

out_contracts.install()
