"""``torchvision.models.quantization``: ResNet, ResNeXt and MobileNet V2/V3 ready for eager
quantization (QuantStub/DeQuantStub, FloatFunctional sums, ``fuse_model``). Pretrained
quantized weights are not downloaded: ``weights=...`` raises; ``quantize=True`` quantizes
the freshly initialised model as torchvision does without weights. The builders are not
entered in ``list_models()``'s registry (torchvision lists them as ``quantized_*``)."""
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from . import utils  # noqa: F401
