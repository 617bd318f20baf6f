"""Fuser methods (torch.ao.quantization.fuser_method_mappings): for each fusable sequence of
module types, the function building the fused module. Post-training (``is_qat=False``) folds
batch norm into the weights; QAT keeps it (``intrinsic.ConvBn2d``... for the QAT modules)."""
from __future__ import annotations

from ember import nn
from ember.ao.nn import intrinsic as nni
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn",
           "get_fuser_method", "get_fuser_method_new"]


def _check_bn(conv_like, bn, n_out):
    if bn.num_features != n_out:
        raise AssertionError(f"Output channel of {type(conv_like).__name__} must match "
                             f"num_features of {type(bn).__name__}")
    if not bn.affine:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(f"Only support fusing {type(bn).__name__} with "
                             f"tracking_running_stats set to True")


def _same_mode(a, b, what):
    if a.training != b.training:
        raise AssertionError(f"{what} both must be in the same mode (train or eval).")


def fuse_conv_bn(is_qat, conv, bn):
    """conv + bn: ``ConvBn{1,2,3}d`` for QAT, else the conv with bn folded in."""
    _same_mode(conv, bn, "Conv and BN")
    fused = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d, nn.Conv3d: nni.ConvBn3d}
    if is_qat:
        _check_bn(conv, bn, conv.out_channels)
        cls = fused.get(type(conv))
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
        return cls(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """conv + bn + relu: ``ConvBnReLU{1,2,3}d`` for QAT, else ``ConvReLU`` of the folded
    conv."""
    _same_mode(conv, bn, "Conv and BN")
    _same_mode(bn, relu, "Conv and BN")
    if is_qat:
        cls = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d,
               nn.Conv3d: nni.ConvBnReLU3d}.get(type(conv))
        _check_bn(conv, bn, conv.out_channels)
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return cls(conv, bn, relu)
    cls = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d,
           nn.Conv3d: nni.ConvReLU3d}.get(type(conv))
    if cls is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return cls(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """linear + bn1d: ``LinearBn1d`` for QAT, else the linear with bn folded in."""
    _same_mode(linear, bn, "Linear and BN")
    if is_qat:
        if bn.num_features != linear.out_features:
            raise AssertionError("Output features of Linear must match num_features of "
                                 "BatchNorm1d")
        _check_bn(linear, bn, bn.num_features)
        return nni.LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """convtranspose + bn (post-training only): the transposed conv with bn folded in."""
    _same_mode(convt, bn, "ConvTranspose and BN")
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(sequential):
    """A fuser method that just wraps the two modules in the fused container class."""
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _sequential_wrapper2(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _sequential_wrapper2(nni.BNReLU3d),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser method for the tuple of module types ``op_list``."""
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    method = mapping.get(op_list)
    if method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return method


def get_fuser_method_new(op_pattern, fuser_method_mapping):
    """The fuser method for ``op_pattern`` (a type or a tuple in FX's reversed nested
    form) in ``fuser_method_mapping``."""
    method = fuser_method_mapping.get(op_pattern)
    if method is None:
        raise AssertionError(f"did not find fuser method for: {op_pattern} ")
    return method
