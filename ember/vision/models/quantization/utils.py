"""What the quantizable models share: ReLU replacement, fusion, and ``quantize=True``'s
post-training quantization (torchvision.models.quantization.utils' behaviour)."""
import ember
import ember.nn as nn


def _replace_relu(module):
    """Replace every ReLU and ReLU6 under ``module`` by a fresh ``nn.ReLU()`` (not in place):
    a ReLU fuses into the convolution before it, and in-place ops cannot be observed."""
    swaps = []
    for name, child in module.named_children():
        _replace_relu(child)
        if type(child) in (nn.ReLU, nn.ReLU6):
            swaps.append(name)
    for name in swaps:
        setattr(module, name, nn.ReLU(inplace=False))


def _fuse_modules(model, modules_to_fuse, is_qat=None, **kwargs):
    """``fuse_modules`` (eval) or ``fuse_modules_qat`` (training); ``is_qat=None`` follows
    ``model.training``."""
    from ember.ao import quantization as tq
    if is_qat is None:
        is_qat = model.training
    fuse = tq.fuse_modules_qat if is_qat else tq.fuse_modules
    return fuse(model, modules_to_fuse, **kwargs)


def quantize_model(model, backend):
    """Quantize ``model`` in place for ``backend``: fuse, attach the qconfig of torchvision's
    quantized checkpoints (min/max activation observer, per-channel weights for 'fbgemm',
    per-tensor for 'qnnpack'; none for other engines, as torchvision), observe one random
    (1, 3, 299, 299) batch, convert."""
    from ember.ao import quantization as tq
    if backend not in ember.backends.quantized.supported_engines:
        raise RuntimeError("Quantized backend not supported ")
    ember.backends.quantized.engine = backend
    model.eval()
    if backend == "fbgemm":
        model.qconfig = tq.QConfig(activation=tq.default_observer,
                                   weight=tq.default_per_channel_weight_observer)
    elif backend == "qnnpack":
        model.qconfig = tq.QConfig(activation=tq.default_observer,
                                   weight=tq.default_weight_observer)
    model.fuse_model()
    tq.prepare(model, inplace=True)
    model(ember.rand(1, 3, 299, 299))
    tq.convert(model, inplace=True)


def quantized_weights_enum(name, members):
    """A download-refusing stand-in for a torchvision quantized weights enum."""
    from .._api import WeightsEnum
    cls = WeightsEnum(name, [(m, m) for m in members])
    cls.DEFAULT = getattr(cls, members[-1])
    return cls


def check_weights(name, weights, kwargs):
    """Refuse pretrained weights as the float builders do (ember downloads nothing)."""
    from .._api import _check_weights
    _check_weights(name, weights, kwargs)


def quant_stubs(module):
    """Give ``module`` its ``quant`` and ``dequant`` stubs (after its other children)."""
    from ember.ao.quantization import DeQuantStub, QuantStub
    module.quant = QuantStub()
    module.dequant = DeQuantStub()


def float_functional():
    from ember.ao.nn.quantized import FloatFunctional
    return FloatFunctional()
