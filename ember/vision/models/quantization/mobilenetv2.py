"""Quantizable MobileNetV2 (torchvision.models.quantization.mobilenetv2): ReLU instead of
ReLU6, residual sums through FloatFunctional, QuantStub/DeQuantStub around the network."""
import ember
import ember.nn as nn

from ...ops.misc import Conv2dNormActivation
from ..mobilenetv2 import InvertedResidual, MobileNetV2
from .utils import (_fuse_modules, _replace_relu, check_weights, float_functional,
                    quant_stubs, quantize_model, quantized_weights_enum)

__all__ = ["QuantizableMobileNetV2", "QuantizableInvertedResidual",
           "MobileNet_V2_QuantizedWeights", "mobilenet_v2"]


class QuantizableInvertedResidual(InvertedResidual):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip_add = float_functional()

    def forward(self, x):
        if self.use_res_connect:
            return self.skip_add.add(x, self.conv(x))
        return self.conv(x)

    def fuse_model(self, is_qat=None):
        """Fold the projection's BatchNorm into its convolution."""
        for idx in range(len(self.conv)):
            if type(self.conv[idx]) is nn.Conv2d:
                _fuse_modules(self.conv, [str(idx), str(idx + 1)], is_qat, inplace=True)


class QuantizableMobileNetV2(MobileNetV2):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        quant_stubs(self)

    def forward(self, x):
        x = self.features(self.quant(x))
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = self.classifier(ember.flatten(x, 1))
        return self.dequant(x)

    def fuse_model(self, is_qat=None):
        """Fuse every conv-BN-ReLU unit and each block's projection conv-BN in place."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                _fuse_modules(m, ["0", "1", "2"], is_qat, inplace=True)
            if type(m) is QuantizableInvertedResidual:
                m.fuse_model(is_qat)


MobileNet_V2_QuantizedWeights = quantized_weights_enum("MobileNet_V2_QuantizedWeights",
                                                       ["IMAGENET1K_QNNPACK_V1"])


def mobilenet_v2(*, weights=None, progress=True, quantize=False, **kwargs):
    """MobileNetV2, quantizable (``quantize=True``: fused, calibrated on random data, int8
    for the qnnpack engine, as torchvision does)."""
    check_weights("mobilenet_v2", weights, kwargs)
    model = QuantizableMobileNetV2(block=QuantizableInvertedResidual, **kwargs)
    _replace_relu(model)
    if quantize:
        quantize_model(model, "qnnpack")
    return model
