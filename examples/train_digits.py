"""Train a small CNN on the 8x8 handwritten digits that scikit-learn ships (1,797 images,
works offline) with ember: DataLoader, BatchNorm CNN, AdamW, OneCycleLR, a tqdm progress
bar with loss and accuracy, and a checkpoint in PyTorch's file format at the end.

    python examples/train_digits.py [--epochs N] [--batch-size B] [--out digits_cnn.pt]
                                    [--quantize [--quantized-out digits_cnn_int8.pt]]

``--quantize`` then quantizes the trained model to int8 (eager post-training static
quantization on the x86 engine), compares float and int8 test accuracy and saves the int8
model's state_dict (loadable with torch.load into the same model quantized by torch).

Written against the torch API: ``import ember as torch`` is the only change a PyTorch
user would make.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


def load_digits_split(seed: int = 0):
    """(train, test) TensorDatasets of (1, 8, 8) float images scaled to [0, 1]."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("this demo needs scikit-learn's bundled digits: "
                         "pip install 'ember[demo]'") from None
    digits = load_digits()
    x = torch.from_numpy(digits.images.astype(np.float32) / 16.0).unsqueeze(1)
    y = torch.from_numpy(digits.target.astype(np.int64))
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(y), generator=g)
    n_test = 360
    test, train = perm[:n_test], perm[n_test:]
    return TensorDataset(x[train], y[train]), TensorDataset(x[test], y[test])


class DigitsCNN(nn.Module):
    """Two conv-BN-ReLU-pool blocks and a linear classifier: (N, 1, 8, 8) -> (N, 10)."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False), nn.BatchNorm2d(2 * width),
            nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2),
                                        nn.Linear(2 * width * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def progress(iterable, **kwargs):
    try:
        from tqdm import tqdm
    except ImportError:        # tqdm is the 'progress' extra; run without a bar
        return iterable
    return tqdm(iterable, **kwargs)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    return correct / total


# conv-BN-ReLU blocks of DigitsCNN.features, fused before quantization
FUSE_GROUPS = [["features.0", "features.1", "features.2"],
               ["features.4", "features.5", "features.6"]]


def quantize_static(model, loader, calibration_batches: int = 8):
    """Post-training static quantization (eager mode): a copy of ``model`` between
    QuantStub/DeQuantStub with its conv-BN-ReLU blocks fused, observed on
    ``calibration_batches`` batches of ``loader``, converted to int8 modules."""
    import copy
    from ember.ao import quantization as tq
    torch.backends.quantized.engine = "x86"
    qmodel = tq.QuantWrapper(copy.deepcopy(model)).eval()
    tq.fuse_modules(qmodel.module, FUSE_GROUPS, inplace=True)
    qmodel.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(qmodel, inplace=True)
    with torch.no_grad():
        for i, (x, _) in enumerate(loader):
            if i == calibration_batches:
                break
            qmodel(x)
    tq.convert(qmodel, inplace=True)
    return qmodel


def quantize_step(model, train_loader, test_loader, float_acc, out):
    """--quantize: quantize, compare accuracies, save the int8 state_dict."""
    import warnings
    t0 = time.perf_counter()
    with warnings.catch_warnings():     # torch's deprecation notices (reduce_range, qtensors)
        warnings.simplefilter("ignore", UserWarning)
        qmodel = quantize_static(model, train_loader)
    int8_acc = evaluate(qmodel, test_loader)
    torch.save(qmodel.state_dict(), out)
    gap = abs(float_acc - int8_acc) * 100
    print(f"int8 (static PTQ, x86 engine, {time.perf_counter() - t0:.1f}s): test accuracy "
          f"{int8_acc:.3f} vs float {float_acc:.3f} ({gap:.1f} points apart, "
          f"{'within' if gap <= 1.0 else 'NOT within'} 1 point); int8 state_dict saved to "
          f"{out} (loadable with torch.load)")
    return qmodel, int8_acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--out", default="digits_cnn.pt")
    ap.add_argument("--quantize", action="store_true",
                    help="also quantize the trained model to int8 and compare accuracy")
    ap.add_argument("--quantized-out", default="digits_cnn_int8.pt")
    args = ap.parse_args()

    torch.manual_seed(0)
    train_set, test_set = load_digits_split()
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              drop_last=True)
    test_loader = DataLoader(test_set, batch_size=256)
    model = DigitsCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"ember {torch.__version__}: digits CNN ({n_params:,} parameters), "
          f"{len(train_set)} train / {len(test_set)} test images")
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        bar = progress(train_loader, desc=f"epoch {epoch:2d}/{args.epochs}", leave=False)
        seen = correct = 0
        running = 0.0
        for x, y in bar:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            seen += len(y)
            correct += (logits.argmax(1) == y).sum().item()
            running += loss.item() * len(y)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{running / seen:.3f}", acc=f"{correct / seen:.3f}")
        test_acc = evaluate(model, test_loader)
        print(f"epoch {epoch:2d}  loss {running / seen:.4f}  train acc {correct / seen:.3f}  "
              f"test acc {test_acc:.3f}  lr {scheduler.get_last_lr()[0]:.5f}")
    elapsed = time.perf_counter() - t0
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": args.epochs, "test_accuracy": test_acc}, args.out)
    verdict = "reached" if test_acc >= 0.97 else "did NOT reach"
    print(f"trained in {elapsed:.1f}s; test accuracy {test_acc:.3f} ({verdict} the 97% target); "
          f"checkpoint saved to {args.out} (loadable with torch.load)")
    if args.quantize:
        quantize_step(model, train_loader, test_loader, test_acc, args.quantized_out)


if __name__ == "__main__":
    main()
