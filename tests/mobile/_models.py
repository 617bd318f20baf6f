"""Small models shared by the mobile tests (ember side)."""
import ember
from ember import nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, groups=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = ember.relu(self.bn1(self.conv1(x)))
        y = nn.functional.hardtanh(self.bn2(self.conv2(y)), 0.0, 6.0)
        y = self.pool(y)
        y = nn.functional.adaptive_avg_pool2d(y, (1, 1)).flatten(1)
        return self.fc(self.drop(y))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(6, 16)
        self.l2 = nn.Linear(16, 16)
        self.l3 = nn.Linear(16, 3)

    def forward(self, x):
        y = ember.relu(self.l1(x))
        y = nn.functional.hardtanh(self.l2(y))
        return self.l3(y)


class Control(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x, n: int):
        y = self.l(x)
        if bool(y.sum() > 0):
            y = y + 1.5
        else:
            y = y * 2
        for i in range(n):
            y = ember.tanh(y) - i
        return y


def seeded(cls, seed=0):
    ember.manual_seed(seed)
    m = cls().eval()
    with ember.no_grad():
        for b in m.buffers():
            if b.dtype == ember.float32:
                b.copy_(ember.rand(b.shape) + 0.5)
    return m
