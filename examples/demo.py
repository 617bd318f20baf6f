"""ember demo: train a small MLP end to end with autograd and manual SGD.

The data set is generated here (two interleaved spirals, 3 classes): not linearly
separable, so the hidden layer has to learn something. Prints the loss falling and the
final training/test accuracy. Runs in a few seconds on a laptop CPU.

    python examples/demo.py [--epochs N] [--hidden H] [--lr LR]
"""
from __future__ import annotations

import argparse
import math
import time

import ember as torch


def spirals(n_per_class: int, classes: int = 3, noise: float = 0.2, seed: int = 0):
    """(N, 2) points on ``classes`` spiral arms and their (N,) integer labels."""
    g = torch.Generator().manual_seed(seed)
    xs, ys = [], []
    for c in range(classes):
        r = torch.linspace(0.0, 1.0, n_per_class)
        theta = torch.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) \
            + torch.randn(n_per_class, generator=g) * noise
        xs.append(torch.stack([r * torch.sin(theta * 1.0), r * torch.cos(theta * 1.0)], dim=1))
        ys.append(torch.full((n_per_class,), c, dtype=torch.int64))
    x, y = torch.cat(xs), torch.cat(ys)
    perm = torch.randperm(len(y), generator=g)
    return x[perm], y[perm]


def init_linear(fan_in: int, fan_out: int, g):
    bound = 1.0 / math.sqrt(fan_in)
    w = (torch.rand(fan_in, fan_out, generator=g) * 2 - 1) * bound
    b = (torch.rand(fan_out, generator=g) * 2 - 1) * bound
    return w.requires_grad_(), b.requires_grad_()


def forward(params, x):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = torch.tanh(x @ w1 + b1)
    h = torch.relu(h @ w2 + b2)
    return h @ w3 + b3


def cross_entropy(logits, y):
    logp = torch.log_softmax(logits, dim=1)
    return -logp[torch.arange(len(y)), y].mean()


def accuracy(logits, y):
    return (logits.argmax(dim=1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.5)
    args = ap.parse_args()

    torch.manual_seed(0)
    x, y = spirals(400)
    n_train = int(0.8 * len(y))
    x_train, y_train, x_test, y_test = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    g = torch.Generator().manual_seed(1)
    params = [init_linear(2, args.hidden, g), init_linear(args.hidden, args.hidden, g),
              init_linear(args.hidden, 3, g)]
    flat = [p for layer in params for p in layer]
    print(f"ember {torch.__version__}: 3-class spirals, {n_train} train / {len(y_test)} test "
          f"points, MLP 2-{args.hidden}-{args.hidden}-3, full-batch SGD lr={args.lr}")
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        loss = cross_entropy(forward(params, x_train), y_train)
        for p in flat:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in flat:
                p -= args.lr * p.grad
        if epoch == 1 or epoch % 50 == 0:
            with torch.no_grad():
                acc = accuracy(forward(params, x_train), y_train)
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  train acc {acc:.3f}")
    with torch.no_grad():
        test_acc = accuracy(forward(params, x_test), y_test)
    print(f"done in {time.perf_counter() - t0:.1f}s: test accuracy {test_acc:.3f}")


if __name__ == "__main__":
    main()
