"""``torchvision.models`` stand-in: classification architectures with torchvision's module
names, so state_dicts are interchangeable. No pretrained weights are downloaded: passing
``weights=...`` or ``pretrained=True`` raises; load a local state_dict instead."""
from ._api import WeightsEnum, get_model, get_model_builder, get_model_weights, get_weight, list_models
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403

import sys as _sys

# the (download-refusing) weights enums: torchvision.models.ResNet18_Weights and friends
for _m in ("alexnet", "densenet", "mobilenetv2", "mobilenetv3", "resnet", "squeezenet", "vgg"):
    for _name, _obj in vars(_sys.modules[f"{__name__}.{_m}"]).items():
        if _name.endswith("_Weights") and isinstance(_obj, type):
            globals()[_name] = _obj
del _m, _name, _obj, _sys


def __getattr__(name):
    # quantization, segmentation and detection load (and register their builders) on first use
    if name in ("quantization", "segmentation", "detection"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
