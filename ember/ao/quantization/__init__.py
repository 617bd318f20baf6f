"""torch.ao.quantization: observers, fake quantization, qconfigs, eager-mode
prepare/convert. FX graph mode is ``ember.ao.quantization.quantize_fx`` (imported by name,
as in torch)."""
from ember.ao.quantization.observer import *  # noqa: F401,F403
from ember.ao.quantization.observer import _PartialWrapper, _with_args  # noqa: F401
from ember.ao.quantization.fake_quantize import *  # noqa: F401,F403
from ember.ao.quantization.qconfig import *  # noqa: F401,F403
from ember.ao.quantization.qconfig_mapping import *  # noqa: F401,F403
from ember.ao.quantization.stubs import *  # noqa: F401,F403
from ember.ao.quantization.quant_type import *  # noqa: F401,F403
from ember.ao.quantization.quantization_mappings import *  # noqa: F401,F403
from ember.ao.quantization import (observer, fake_quantize, qconfig, qconfig_mapping,  # noqa
                                   stubs, quant_type, quantization_mappings)
from ember.ao.quantization.fuse_modules import *  # noqa: F401,F403
from ember.ao.quantization.fuser_method_mappings import *  # noqa: F401,F403
from ember.ao.quantization.quantize import *  # noqa: F401,F403
from ember.ao.quantization.quantize import _get_observer_dict  # noqa: F401
from ember.ao.quantization import utils, fuser_method_mappings  # noqa: F401
from ember.ao.quantization.quantize_jit import *  # noqa: F401,F403
from ember.ao.quantization.utils import _observer_or_fake_quant_type as _ooq

ObserverOrFakeQuantize = _ooq()
