"""Helpers the model files share: channel rounding, weight initialisation, classifier heads."""
import ember.nn as nn


def _make_divisible(v, divisor, min_value=None):
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, by default
    ``divisor``), moved up one step when rounding would lose more than 10% of ``v``."""
    floor = divisor if min_value is None else min_value
    rounded = max(floor, divisor * (int(v + divisor / 2) // divisor))
    return rounded + divisor if rounded < 0.9 * v else rounded


def init_weights(model, conv_weight, linear_weight=None, zero_linear_bias=False):
    """Initialise ``model`` in module order: ``conv_weight(w)`` on each convolution (its bias
    zeroed), norm layers to weight 1 and bias 0, ``linear_weight(w)`` on each Linear when
    given (its bias zeroed then, or when ``zero_linear_bias``)."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            conv_weight(m.weight)
            biases = [m.bias]
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            if m.weight is not None:
                nn.init.ones_(m.weight)
            biases = [m.bias]
        elif isinstance(m, nn.Linear):
            if linear_weight is not None:
                linear_weight(m.weight)
            biases = [m.bias] if linear_weight is not None or zero_linear_bias else []
        else:
            biases = []
        for b in biases:
            if b is not None:
                nn.init.zeros_(b)


def fan_out_normal(weight):
    """He (Kaiming) normal initialisation over the output fan, gain sqrt(2)."""
    nn.init.kaiming_normal_(weight, mode="fan_out", nonlinearity="relu")


def small_normal(weight):
    nn.init.normal_(weight, 0.0, 0.01)


def classifier_head(sizes, dropout, dropout_first):
    """Linear layers through ``sizes`` with an in-place ReLU after each hidden one and a
    Dropout either before each hidden Linear (AlexNet) or after each hidden ReLU (VGG)."""
    layers = []
    last = len(sizes) - 2
    for i in range(last + 1):
        hidden = i < last
        if hidden and dropout_first:
            layers.append(nn.Dropout(p=dropout))
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if hidden:
            layers.append(nn.ReLU(inplace=True))
            if not dropout_first:
                layers.append(nn.Dropout(p=dropout))
    return nn.Sequential(*layers)
