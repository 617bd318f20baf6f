"""Per-sample gradients of a 2-layer MLP (batch 64): ember vmap(grad) vs torch.func, and
vs a Python loop of single-sample backward passes in ember.

    python benchmarks/func.py
"""
import time

import numpy as np

import ember
import ember.nn.functional as EF
from ember.func import vmap, grad

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

B, D, H, C = 64, 128, 256, 10
rng = np.random.default_rng(0)
x = rng.standard_normal((B, D)).astype(np.float32)
y = rng.integers(0, C, B)
w1 = (rng.standard_normal((H, D)) * 0.05).astype(np.float32)
b1 = np.zeros(H, np.float32)
w2 = (rng.standard_normal((C, H)) * 0.05).astype(np.float32)
b2 = np.zeros(C, np.float32)


def timeit(fn, n=5):
    fn()
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def e_loss(p, xi, yi):
    h = EF.relu(EF.linear(xi, p["w1"], p["b1"]))
    return EF.cross_entropy(EF.linear(h, p["w2"], p["b2"]).unsqueeze(0), yi.unsqueeze(0))


ep = {k: ember.tensor(v) for k, v in dict(w1=w1, b1=b1, w2=w2, b2=b2).items()}
ex, ey = ember.tensor(x), ember.tensor(y)
e_vmap = lambda: vmap(grad(e_loss), in_dims=(None, 0, 0))(ep, ex, ey)


def e_loop():
    out = []
    params = {k: v.detach().requires_grad_() for k, v in ep.items()}
    for i in range(B):
        for p in params.values():
            p.grad = None
        e_loss(params, ex[i], ey[i]).backward()
        out.append({k: p.grad for k, p in params.items()})
    return out


# correctness: vmap(grad) equals the loop
g = e_vmap()
ref = e_loop()
for k in ep:
    np.testing.assert_allclose(g[k].numpy(), np.stack([r[k].numpy() for r in ref]),
                               rtol=1e-4, atol=1e-6)

t_vmap = timeit(e_vmap)
t_loop = timeit(e_loop, 3)
print(f"ember vmap(grad):            {t_vmap * 1e3:8.2f} ms")
print(f"ember loop of backward:      {t_loop * 1e3:8.2f} ms   (loop / vmap = "
      f"{t_loop / t_vmap:.2f}x)")
if torch is not None:
    tp = {k: torch.tensor(v) for k, v in dict(w1=w1, b1=b1, w2=w2, b2=b2).items()}
    tx, ty = torch.tensor(x), torch.tensor(y)

    def t_loss(p, xi, yi):
        h = TF.relu(TF.linear(xi, p["w1"], p["b1"]))
        return TF.cross_entropy(TF.linear(h, p["w2"], p["b2"]).unsqueeze(0), yi.unsqueeze(0))
    t_fn = lambda: torch.func.vmap(torch.func.grad(t_loss), in_dims=(None, 0, 0))(tp, tx, ty)
    tg = t_fn()
    for k in ep:
        np.testing.assert_allclose(g[k].numpy(), tg[k].numpy(), rtol=1e-3, atol=1e-5)
    t_torch = timeit(t_fn)
    print(f"torch.func vmap(grad):       {t_torch * 1e3:8.2f} ms   (ember / torch = "
          f"{t_vmap / t_torch:.2f}x)")
from ember.func import FALLBACK_COUNTS
print("vmap loop fallbacks used:", dict(FALLBACK_COUNTS) or "none")


# ---------------------------------------------------------------- neural tangent kernel
# The empirical NTK of PyTorch's "Neural Tangent Kernels" tutorial (Jacobian contraction):
# per-sample Jacobians of a small CNN's outputs w.r.t. its parameters,
# ``vmap(jacrev(fnet_single), (None, 0))``, contracted as ``einsum('Naf,Mbf->NMab')``.
N1, N2 = 20, 5


def ntk_net(lib):
    """A small CNN on 3x16x16 images: 3 convs (16 channels, 3x3) with ReLU, a Linear to 10."""
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 16, 3), nn.Conv2d(16, 16, 3)
            self.c3, self.fc = nn.Conv2d(16, 16, 3), nn.Linear(16 * 10 * 10, 10)

        def forward(self, x):
            x = self.c3(self.c2(self.c1(x).relu()).relu()).relu()
            return self.fc(x.flatten(1))
    return CNN()


def ntk_setup(lib, fn):
    """(function computing the (N1, N2, 10, 10) NTK, its first result)."""
    lib.manual_seed(0)
    net = ntk_net(lib)
    if lib is not ember:        # same weights as ember's model
        with torch.no_grad():
            for (_, p), (_, q) in zip(net.named_parameters(), ember_ntk_net.named_parameters()):
                p.copy_(torch.from_numpy(q.detach().numpy().copy()))
    params = {k: v.detach() for k, v in net.named_parameters()}
    x1 = lib.from_numpy(xa.copy())
    x2 = lib.from_numpy(xb.copy())

    def fnet_single(p, x):
        return fn.functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)

    def ntk():
        j1 = fn.vmap(fn.jacrev(fnet_single), (None, 0))(params, x1)
        j2 = fn.vmap(fn.jacrev(fnet_single), (None, 0))(params, x2)
        j1 = [j.flatten(2) for j in j1.values()]
        j2 = [j.flatten(2) for j in j2.values()]
        return lib.stack([lib.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(j1, j2)]).sum(0)
    return net, ntk


xa = rng.standard_normal((N1, 3, 16, 16)).astype(np.float32)
xb = rng.standard_normal((N2, 3, 16, 16)).astype(np.float32)
FALLBACK_COUNTS.clear()
ember_ntk_net, e_ntk = ntk_setup(ember, ember.func)
k_e = e_ntk()
t_e = timeit(e_ntk, 3)
print(f"ember NTK vmap(jacrev) {N1}x{N2}: {t_e * 1e3:8.2f} ms")
if torch is not None:
    _, t_ntk = ntk_setup(torch, torch.func)
    k_t = t_ntk()
    np.testing.assert_allclose(k_e.numpy(), k_t.numpy(), rtol=1e-3, atol=1e-3)
    t_t = timeit(t_ntk, 3)
    print(f"torch.func NTK:              {t_t * 1e3:8.2f} ms   (ember / torch = "
          f"{t_e / t_t:.2f}x)")
print("vmap loop fallbacks used (NTK):", dict(FALLBACK_COUNTS) or "none")
