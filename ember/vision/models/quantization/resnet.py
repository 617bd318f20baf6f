"""Quantizable ResNet / ResNeXt (torchvision.models.quantization.resnet): the float network
between QuantStub and DeQuantStub, residual sums through FloatFunctional.add_relu (so they
quantize), and ``fuse_model`` fusing each conv-BN(-ReLU) as torchvision does."""
import ember
import ember.nn as nn

from ..resnet import BasicBlock, Bottleneck, ResNet
from .utils import (_fuse_modules, _replace_relu, check_weights, float_functional,
                    quant_stubs, quantize_model, quantized_weights_enum)

__all__ = ["QuantizableResNet", "QuantizableBasicBlock", "QuantizableBottleneck",
           "ResNet18_QuantizedWeights", "ResNet50_QuantizedWeights",
           "ResNeXt101_32X8D_QuantizedWeights", "ResNeXt101_64X4D_QuantizedWeights",
           "resnet18", "resnet50", "resnext101_32x8d", "resnext101_64x4d"]


class QuantizableBasicBlock(BasicBlock):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_relu = float_functional()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.add_relu.add_relu(out, identity)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, [["conv1", "bn1", "relu"], ["conv2", "bn2"]], is_qat, inplace=True)
        if self.downsample is not None:
            _fuse_modules(self.downsample, ["0", "1"], is_qat, inplace=True)


class QuantizableBottleneck(Bottleneck):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip_add_relu = float_functional()
        self.relu1 = nn.ReLU(inplace=False)
        self.relu2 = nn.ReLU(inplace=False)

    def forward(self, x):
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.relu2(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.skip_add_relu.add_relu(out, identity)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"],
                             ["conv3", "bn3"]], is_qat, inplace=True)
        if self.downsample is not None:
            _fuse_modules(self.downsample, ["0", "1"], is_qat, inplace=True)


class QuantizableResNet(ResNet):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        quant_stubs(self)

    def forward(self, x):
        x = self.quant(x)
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.fc(ember.flatten(self.avgpool(x), 1))
        return self.dequant(x)

    def fuse_model(self, is_qat=None):
        """Fuse conv1/bn1/relu and every block's conv-BN(-ReLU) groups in place (eval:
        ConvReLU2d / folded Conv2d; training or ``is_qat``: ConvBnReLU2d / ConvBn2d)."""
        _fuse_modules(self, ["conv1", "bn1", "relu"], is_qat, inplace=True)
        for m in self.modules():
            if type(m) in (QuantizableBasicBlock, QuantizableBottleneck):
                m.fuse_model(is_qat)


ResNet18_QuantizedWeights = quantized_weights_enum("ResNet18_QuantizedWeights",
                                                   ["IMAGENET1K_FBGEMM_V1"])
ResNet50_QuantizedWeights = quantized_weights_enum("ResNet50_QuantizedWeights",
                                                   ["IMAGENET1K_FBGEMM_V1",
                                                    "IMAGENET1K_FBGEMM_V2"])
ResNeXt101_32X8D_QuantizedWeights = quantized_weights_enum(
    "ResNeXt101_32X8D_QuantizedWeights", ["IMAGENET1K_FBGEMM_V1", "IMAGENET1K_FBGEMM_V2"])
ResNeXt101_64X4D_QuantizedWeights = quantized_weights_enum(
    "ResNeXt101_64X4D_QuantizedWeights", ["IMAGENET1K_FBGEMM_V1"])


def _resnet(name, block, layers, weights, quantize, kwargs):
    check_weights(name, weights, kwargs)
    model = QuantizableResNet(block, layers, **kwargs)
    _replace_relu(model)
    if quantize:
        quantize_model(model, "fbgemm")
    return model


def _fixed(kwargs, **values):
    for key, value in values.items():
        if kwargs.setdefault(key, value) != value:
            raise ValueError(f"The parameter '{key}' expected value {value} but got "
                             f"{kwargs[key]} instead.")
    return kwargs


def resnet18(*, weights=None, progress=True, quantize=False, **kwargs):
    """ResNet-18, quantizable (``quantize=True``: fused, calibrated on random data, int8)."""
    return _resnet("resnet18", QuantizableBasicBlock, [2, 2, 2, 2], weights, quantize, kwargs)


def resnet50(*, weights=None, progress=True, quantize=False, **kwargs):
    """ResNet-50, quantizable (``quantize=True``: fused, calibrated on random data, int8)."""
    return _resnet("resnet50", QuantizableBottleneck, [3, 4, 6, 3], weights, quantize, kwargs)


def resnext101_32x8d(*, weights=None, progress=True, quantize=False, **kwargs):
    _fixed(kwargs, groups=32, width_per_group=8)
    return _resnet("resnext101_32x8d", QuantizableBottleneck, [3, 4, 23, 3], weights, quantize,
                   kwargs)


def resnext101_64x4d(*, weights=None, progress=True, quantize=False, **kwargs):
    _fixed(kwargs, groups=64, width_per_group=4)
    return _resnet("resnext101_64x4d", QuantizableBottleneck, [3, 4, 23, 3], weights, quantize,
                   kwargs)
