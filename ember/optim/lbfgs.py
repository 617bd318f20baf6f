"""L-BFGS: quasi-Newton steps from a limited history of (step, gradient change) pairs, with an
optional strong-Wolfe line search (cubic interpolation, after minFunc)."""
import math

import ember
from ember._tensor import Tensor
from .optimizer import Optimizer, _check_lr, _num, _real, _to_scalar

__all__ = ["LBFGS"]


def _sqrt(x):
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def _cubic_min(a, b, bounds=None):
    """Minimiser of the cubic through points ``a`` and ``b`` (each ``(t, f, slope)``),
    clipped to ``bounds`` (the interval between them by default); the middle of the bounds
    when the cubic has no real stationary point."""
    (t1, f1, s1), (t2, f2, s2) = a, b
    lo, hi = bounds if bounds is not None else ((t1, t2) if t1 <= t2 else (t2, t1))
    d1 = s1 + s2 - 3 * (f1 - f2) / (t1 - t2)
    disc = d1 ** 2 - s1 * s2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = _sqrt(disc)
    if t1 <= t2:
        m = t2 - (t2 - t1) * ((s2 + d2 - d1) / (s2 - s1 + 2 * d2))
    else:
        m = t1 - (t1 - t2) * ((s1 + d2 - d1) / (s1 - s2 + 2 * d2))
    return min(max(m, lo), hi)


class _Point:
    """One trial of the line search: step ``t``, loss ``f``, flat gradient ``g``, slope."""
    __slots__ = ("t", "f", "g", "slope")

    def __init__(self, t, f, g, slope):
        self.t, self.f, self.g, self.slope = t, f, g, slope

    def cubic(self):
        return self.t, self.f, self.slope


def _strong_wolfe(probe, d, start, t, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step along ``d`` satisfying the strong Wolfe conditions.

    ``start`` is the point at t = 0 and ``probe(t)`` returns ``(loss, flat_grad)`` at step
    ``t``.  Returns ``(loss, flat_grad, t, evaluations)`` of the chosen step."""
    f0, slope0 = start.f, start.slope
    d_scale = d.abs().max()

    def trial(t):
        f, g = probe(t)
        return _Point(t, f, g, g.dot(d))

    def too_high(p):  # fails the sufficient-decrease (Armijo) condition
        return p.f > f0 + c1 * p.t * slope0

    def curvature_ok(p):
        return abs(p.slope) <= -c2 * slope0

    # phase 1: grow the step until an interval containing a good step is bracketed
    prev, cur, evals, tries, found = start, trial(t), 1, 0, False
    bracket = None
    while tries < max_ls:
        if too_high(cur) or (tries > 1 and cur.f >= prev.f):
            bracket = [prev, _Point(cur.t, cur.f, cur.g.clone(), cur.slope)]
            break
        if curvature_ok(cur):
            bracket, found = [cur], True
            break
        if cur.slope >= 0:
            bracket = [prev, _Point(cur.t, cur.f, cur.g.clone(), cur.slope)]
            break
        t_next = _cubic_min(prev.cubic(), cur.cubic(),
                            bounds=(cur.t + 0.01 * (cur.t - prev.t), cur.t * 10))
        prev = _Point(cur.t, cur.f, cur.g.clone(), cur.slope)
        cur = trial(t_next)
        evals += 1
        tries += 1
    if tries == max_ls:
        bracket = [start, cur]

    # phase 2: shrink the bracket (cubic steps kept away from its ends) until a step passes
    def order():
        return (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    low, high = order()
    stalled = False
    while not found and tries < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_scale < tolerance_change:
            break
        t = _cubic_min(a.cubic(), b.cubic())
        t_max, t_min = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (t_max - t_min)
        if min(t_max - t, t - t_min) < margin:
            if stalled or t >= t_max or t <= t_min:
                t = t_max - margin if abs(t - t_max) < abs(t - t_min) else t_min + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        new = trial(t)
        evals += 1
        tries += 1
        kept = _Point(new.t, new.f, new.g.clone(), new.slope)
        if too_high(new) or new.f >= bracket[low].f:
            bracket[high] = kept
            low, high = order()
        else:
            if curvature_ok(new):
                found = True
            elif new.slope * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = kept
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """Limited-memory BFGS over all parameters as one flat vector (a single group only).

    ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` loss evaluations):
    the direction is the two-loop-recursion product of the inverse-Hessian estimate (from
    the last ``history_size`` pairs with positive curvature, scaled by ``y.s / y.y``) and
    the negative gradient; the step is ``lr`` (the first ever is also capped at
    ``1 / |g|_1``) or found by ``line_search_fn='strong_wolfe'``.  It stops early on a
    gradient below ``tolerance_grad`` or changes below ``tolerance_change``.  All state
    lives under the first parameter.
    """

    _tensor_step = False

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        _check_lr(lr)
        super().__init__(params, dict(
            lr=lr, max_iter=max_iter,
            max_eval=max_iter * 5 // 4 if max_eval is None else max_eval,
            tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
            history_size=history_size, line_search_fn=line_search_fn))
        groups = self.param_groups
        if len(groups) > 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = groups[0]["params"]

    # ---- the parameters as one flat real vector --------------------------------------------
    def _flat_grad(self):
        parts = []
        for p in self._params:
            g = p.grad if p.grad is not None else ember.zeros(p.numel(), dtype=p.dtype)
            parts.append(_real(g).reshape(-1))
        return ember.cat(parts, 0)

    def _move(self, t, d):
        """params += t * d (d laid out like :meth:`_flat_grad`)."""
        at = 0
        for p in self._params:
            p = _real(p)
            n = p.numel()
            p.add_(d[at:at + n].view_as(p), alpha=t)
            at += n

    def _probe(self, evaluate, origin, t, d):
        """Loss and flat gradient at ``origin + t * d``; the parameters are put back."""
        self._move(t, d)
        loss = float(evaluate())
        grad = self._flat_grad()
        for p, saved in zip(self._params, origin):
            p.copy_(saved)
        return loss, grad

    @staticmethod
    def _direction(state, g, dirs, steps, rho, h_diag, history_size):
        """Two-loop recursion: -H g for the current inverse-Hessian estimate."""
        alphas = state.setdefault("al", [None] * history_size)
        q = g.neg()
        for i in reversed(range(len(dirs))):
            alphas[i] = steps[i].dot(q) * rho[i]
            q.add_(dirs[i], alpha=-alphas[i])
        r = ember.mul(q, h_diag)
        for i in range(len(dirs)):
            beta = dirs[i].dot(r) * rho[i]
            r.add_(steps[i], alpha=alphas[i] - beta)
        return r

    def step(self, closure):
        group = self.param_groups[0]
        lr = _num(_to_scalar(group["lr"]))
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        search = group["line_search_fn"]

        def evaluate():
            with ember.enable_grad():
                return closure()

        state = self.state[self._params[0]]   # LBFGS keeps all its state on the first param
        for counter in ("func_evals", "n_iter"):
            state.setdefault(counter, 0)
        first_loss = evaluate()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if g.abs().max() <= tol_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        dirs, steps, rho, h_diag = (state.get(k) for k in ("old_dirs", "old_stps", "ro", "H_diag"))
        prev_g, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        for it in range(1, max_iter + 1):
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = g.neg()
                dirs, steps, rho, h_diag = [], [], [], 1
            else:
                y, s = g.sub(prev_g), d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep only pairs with positive curvature
                    if len(dirs) == group["history_size"]:
                        del dirs[0], steps[0], rho[0]
                    dirs.append(y)
                    steps.append(s)
                    rho.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                d = self._direction(state, g, dirs, steps, rho, h_diag, group["history_size"])
            if prev_g is None:
                prev_g = g.clone()
            else:
                prev_g.copy_(g)
            prev_loss = loss

            t = min(1.0, 1.0 / g.abs().sum()) * lr if state["n_iter"] == 1 else lr
            slope = g.dot(d)
            if slope > -tol_change:
                break

            used = 0
            if search is not None:
                if search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                origin = [p.clone() for p in self._params]
                loss, g, t, used = _strong_wolfe(
                    lambda step: self._probe(evaluate, origin, step, d), d,
                    _Point(0, loss, g.clone(), slope), t, max_ls=max_eval - evals)
                self._move(t, d)
                converged = g.abs().max() <= tol_grad
            else:
                self._move(t, d)
                converged = False
                if it != max_iter:  # the last fixed step is not re-evaluated
                    loss = float(evaluate())
                    g = self._flat_grad()
                    converged = g.abs().max() <= tol_grad
                    used = 1
            evals += used
            state["func_evals"] += used

            if it == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=rho, H_diag=h_diag,
                     prev_flat_grad=prev_g, prev_loss=prev_loss)
        return first_loss
