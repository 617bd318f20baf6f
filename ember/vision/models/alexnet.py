"""AlexNet (Krizhevsky et al. 2012, the single-tower variant of "One weird trick")."""
import ember
import ember.nn as nn

from ._api import define_builders
from ._utils import classifier_head

__all__ = ["AlexNet", "alexnet"]

# convolutions: (out channels, kernel, stride, padding, followed by a 3x3/2 max-pool)
_CONVS = ((64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False),
          (256, 3, 1, 1, False), (256, 3, 1, 1, True))


class AlexNet(nn.Module):
    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        layers, channels = [], 3
        for out, kernel, stride, padding, pool in _CONVS:
            layers += [nn.Conv2d(channels, out, kernel, stride, padding), nn.ReLU(inplace=True)]
            if pool:
                layers.append(nn.MaxPool2d(3, 2))
            channels = out
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = classifier_head((channels * 6 * 6, 4096, 4096, num_classes), dropout, dropout_first=True)

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


define_builders(globals(), {"alexnet": ("AlexNet_Weights", None)}, lambda _, kwargs: AlexNet(**kwargs))
