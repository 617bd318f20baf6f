"""Small models written once for both libraries (``build(nn, F, T, kind)`` with torch's or
ember's namespaces), used by the FX quantization and Numeric Suite tests."""


def build(nn, F, T, kind):
    """kind: "cbr" conv-bn-relu-pool-flatten-linear, "res" add/cat residuals,
    "lin" functional linear + hardswish + sigmoid, "ops" functional conv + relu, BatchNorm,
    Hardswish, pools, mul, Dropout, shape-dependent reshape, LeakyReLU, ELU (modules and
    functions), transposes,
    Sigmoid/tanh (two outputs), "nest" submodules (Sequential, a block with functional add/relu
    inside), nn.Flatten (not quantizable: float between), a scalar mul."""
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
    elif kind == "nest":
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 1)
                self.bn = nn.BatchNorm2d(3)

            def forward(self, x):
                return F.relu(T.add(self.bn(self.conv(x)), x))

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), nn.ReLU())
                self.block = Block()
                self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                          nn.Linear(3, 2))

            def forward(self, x):
                return self.head(self.block(self.stem(x)) * 0.5)
    elif kind == "basic":
        class Basic(nn.Module):
            """torchvision's BasicBlock: one inplace ReLU called twice, ``out += x``."""
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(4)
                self.relu = nn.ReLU(inplace=True)
                self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(4)

            def forward(self, x):
                out = self.relu(self.bn1(self.conv1(x)))
                out = self.bn2(self.conv2(out))
                out += x
                return self.relu(out)

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 4, 1)
                self.block = Basic()
                self.pool = nn.AdaptiveAvgPool2d((1, 1))
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(T.flatten(self.pool(self.block(self.stem(x))), 1))
    elif kind == "convt":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.ct = nn.ConvTranspose2d(3, 2, 3, stride=2)
                self.c = nn.Conv2d(2, 2, 1)

            def forward(self, x):
                return self.c(self.ct(x))
    elif kind == "float_ops":
        class M(nn.Module):
            """Ops the backend does not quantize (exp, GELU, sum) between quantized ones, a
            value used by several ops, an int output."""
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(3, 3, 1)
                self.c2 = nn.Conv2d(3, 3, 1)
                self.gelu = nn.GELU()

            def forward(self, x):
                y = self.gelu(T.exp(self.c1(x)))
                z = y.sum(1, keepdim=True) + y
                return self.c2(z), y.size(0)
    elif kind == "ops":
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(T.randn(4, 3, 3, 3) * 0.3)
                self.b = nn.Parameter(T.randn(4) * 0.1)
                self.bn = nn.BatchNorm2d(4)
                self.hs = nn.Hardswish()
                self.sig = nn.Sigmoid()
                self.mp = nn.MaxPool2d(2)
                self.drop = nn.Dropout(0.1)
                self.lin = nn.Linear(4, 3)
                self.lrelu = nn.LeakyReLU(0.1)
                self.elu = nn.ELU()

            def forward(self, x):
                # torch's lowering needs every conv2d argument given, as tuples
                y = F.relu(F.conv2d(x, self.w, self.b, (1, 1), (1, 1), (1, 1), 1))
                y = self.mp(self.hs(self.bn(y)))
                y = self.drop(y * y)
                y = F.adaptive_avg_pool2d(y, 1).reshape(y.shape[0], -1)
                y = self.elu(self.lrelu(self.lin(y)))
                y = F.leaky_relu(F.elu(y), 0.2)
                y = y.transpose(0, 1).contiguous().transpose(0, 1)
                return self.sig(y), T.tanh(y)
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


SHAPES = {"cbr": (2, 3, 8, 8), "res": (2, 3, 4, 4), "lin": (3, 4), "ops": (2, 3, 8, 8),
          "nest": (2, 3, 6, 6), "basic": (2, 3, 6, 6), "convt": (1, 3, 4, 4),
          "float_ops": (2, 3, 4, 4)}
