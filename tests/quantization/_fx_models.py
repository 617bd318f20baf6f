"""Small models written once for both libraries (``build(nn, F, T, kind)`` with torch's or
ember's namespaces), used by the FX quantization and Numeric Suite tests."""


def build(nn, F, T, kind):
    """kind: "cbr" conv-bn-relu-pool-flatten-linear, "res" add/cat residuals,
    "lin" functional linear + hardswish + sigmoid."""
    if kind == "cbr":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.bn = nn.BatchNorm2d(4)
                self.relu = nn.ReLU()
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                x = self.pool(self.relu(self.bn(self.conv(x))))
                return self.fc(T.flatten(x, 1))
    elif kind == "res":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(3, 3, 1)
                self.c2 = nn.Conv2d(3, 3, 1)
                self.relu = nn.ReLU()

            def forward(self, x):
                y = self.c1(x)
                z = self.relu(T.add(y, self.c2(y)))
                w = F.relu(z + y)
                return T.cat([w, z], 1)
    else:
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(T.randn(5, 4))
                self.b = nn.Parameter(T.randn(5))

            def forward(self, x):
                y = F.hardswish(F.linear(x, self.w, self.b))
                return T.sigmoid(y)
    return M().eval()


SHAPES = {"cbr": (2, 3, 8, 8), "res": (2, 3, 4, 4), "lin": (3, 4)}
