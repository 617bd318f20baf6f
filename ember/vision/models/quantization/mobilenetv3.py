"""Quantizable MobileNetV3-Large (torchvision.models.quantization.mobilenetv3): residual sums
and the squeeze-excitation product through FloatFunctional; ``quantize=True`` follows
torchvision's quantization-aware path (fused for QAT, fake-quantized, converted)."""
import ember
import ember.nn as nn

from ...ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..mobilenetv3 import InvertedResidual, MobileNetV3, _mobilenet_v3_conf
from .utils import (_fuse_modules, _replace_relu, check_weights, float_functional,
                    quant_stubs, quantized_weights_enum)

__all__ = ["QuantizableMobileNetV3", "QuantizableInvertedResidual",
           "QuantizableSqueezeExcitation", "MobileNet_V3_Large_QuantizedWeights",
           "mobilenet_v3_large"]


class QuantizableSqueezeExcitation(SqueezeExcitation):
    _version = 2

    def __init__(self, *args, **kwargs):
        kwargs["scale_activation"] = nn.Hardsigmoid
        super().__init__(*args, **kwargs)
        self.skip_mul = float_functional()

    def forward(self, input):
        return self.skip_mul.mul(self._scale(input), input)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, ["fc1", "activation"], is_qat, inplace=True)


class QuantizableInvertedResidual(InvertedResidual):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, se_layer=QuantizableSqueezeExcitation, **kwargs)
        self.skip_add = float_functional()

    def forward(self, x):
        if self.use_res_connect:
            return self.skip_add.add(x, self.block(x))
        return self.block(x)


class QuantizableMobileNetV3(MobileNetV3):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        quant_stubs(self)

    def forward(self, x):
        x = self.avgpool(self.features(self.quant(x)))
        x = self.classifier(ember.flatten(x, 1))
        return self.dequant(x)

    def fuse_model(self, is_qat=None):
        """Fuse conv-BN (and its ReLU; Hardswish does not fuse) of every unit, and each
        squeeze-excitation's fc1 with its ReLU, in place."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                names = ["0", "1"]
                if len(m) == 3 and type(m[2]) is nn.ReLU:
                    names.append("2")
                _fuse_modules(m, names, is_qat, inplace=True)
            elif type(m) is QuantizableSqueezeExcitation:
                m.fuse_model(is_qat)


MobileNet_V3_Large_QuantizedWeights = quantized_weights_enum(
    "MobileNet_V3_Large_QuantizedWeights", ["IMAGENET1K_QNNPACK_V1"])


def mobilenet_v3_large(*, weights=None, progress=True, quantize=False, **kwargs):
    """MobileNetV3-Large, quantizable. ``quantize=True`` fuses for QAT, prepares with the
    qnnpack QAT qconfig and converts (as torchvision does; no calibration pass)."""
    check_weights("mobilenet_v3_large", weights, kwargs)
    shape = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated") if k in kwargs}
    setting, last_channel = _mobilenet_v3_conf("mobilenet_v3_large", **shape)
    model = QuantizableMobileNetV3(setting, last_channel, block=QuantizableInvertedResidual,
                                   **kwargs)
    _replace_relu(model)
    if quantize:
        from ember.ao import quantization as tq
        model.fuse_model(is_qat=True)
        model.qconfig = tq.get_default_qat_qconfig("qnnpack")
        tq.prepare_qat(model, inplace=True)
        tq.convert(model, inplace=True)
        model.eval()
    return model
