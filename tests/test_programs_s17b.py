"""Regressions found diffing everyday programs (round 12b, session 17: extension points and
advanced autograd as users write them: custom autograd.Functions with setup_context/vmap/jvp,
forward-mode AD, torch.func transforms, hooks, tensor subclasses and __torch_function__,
checkpointing, grad modes) run under torch and under ``python -m ember.run``; each checked
against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:       # noqa: BLE001 - the class and text are compared
        return type(e).__name__, str(e)
    if isinstance(r, (tuple, list)):
        return "ok", [tuple(t.shape) if hasattr(t, "shape") else t for t in r]
    return "ok", tuple(r.shape) if hasattr(r, "shape") else type(r).__name__


def _both(case):
    return _outcome(lambda: case(ember)), _outcome(lambda: case(torch))


# ---------------------------------------------------------------- forward AD levels

def _dual_outside(L):
    return L.autograd.forward_ad.make_dual(L.ones(2), L.ones(2))


def _dual_nested(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        with fw.dual_level():
            pass


def _dual_exit_none(L):
    L.autograd.forward_ad.exit_dual_level()


def _dual_exit_wrong(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        fw.exit_dual_level(level=1)


def _dual_bad_level(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        return fw.make_dual(L.ones(2), L.ones(2), level=3)


@pytest.mark.parametrize("case", [_dual_outside, _dual_nested, _dual_exit_none,
                                  _dual_exit_wrong, _dual_bad_level])
def test_forward_ad_level_errors_are_torchs(case):
    # make_dual outside a level named 'dual_level() context' (torch: 'no level exists, make
    # sure to enter_dual_level() first'); a nested level ran (torch has one level only)
    e, t = _both(case)
    assert e == t


def test_forward_ad_level_is_usable_again_after_the_nested_error():
    fw = ember.autograd.forward_ad
    with fw.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fw.enter_dual_level()
        d = fw.make_dual(ember.ones(2), ember.full((2,), 3.0))
        np.testing.assert_array_equal(_np(fw.unpack_dual(d * 2).tangent), [6.0, 6.0])
    assert fw._levels == []


def test_function_jvp_count_and_func_jvp_shape_texts():
    def fn_case(L):
        class TwoOut(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def jvp(ctx, t):
                return t * 2
        fw = L.autograd.forward_ad
        with fw.dual_level():
            return TwoOut.apply(fw.make_dual(L.ones(3), L.ones(3)))
    e, t = _both(fn_case)
    assert e == t and "invalid number of forward gradients (expected 2 but got 1)" in e[1]
    e, t = _both(lambda L: L.func.jvp(lambda a: a * 2, (L.ones(4),), (L.ones(3),)))
    assert e == t and "Tensor is of size [4] while the given forward gradient" in e[1]


# ---------------------------------------------------------------- torch.func argument texts

@pytest.mark.parametrize("transform", ["grad", "grad_and_value", "jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [2, (0.5,), 0.5, (), (0, 0), "a", [0]])
def test_func_argnums_errors_are_torchs(transform, argnums):
    # ember named the transform and accepted (0, 0); torch checks emptiness, each element's
    # type and uniqueness, in that order, without the transform's name
    def case(L):
        return getattr(L.func, transform)(lambda a: a.sum(), argnums=argnums)(L.ones(3))
    e, t = _both(case)
    assert e == t


@pytest.mark.parametrize("transform", ["grad", "grad_and_value", "jacrev", "jacfwd"])
@pytest.mark.parametrize("which", range(3))
def test_func_has_aux_errors_name_torchs_call(transform, which):
    fns = [lambda a: (a.sum(), 1), lambda a: a.sum(), lambda a: [a.sum()]]

    def case(L):
        return getattr(L.func, transform)(fns[which], has_aux=True)(L.ones(3))
    e, t = _both(case)
    assert e == t


@pytest.mark.parametrize("k", range(4))
def test_vjp_jvp_output_errors_are_torchs(k):
    def case(L):
        x = L.ones(3)
        return [lambda: L.func.vjp(lambda a: a, x, has_aux=True),
                lambda: L.func.jvp(lambda a: a, (x,), (x,), has_aux=True),
                lambda: L.func.vjp(lambda a: 3.0, x),
                lambda: L.func.jvp(lambda a: 3.0, (x,), (x,))][k]()
    e, t = _both(case)
    assert e == t


# ---------------------------------------------------------------- custom Functions and functorch

def _old_style(L):
    class Old(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x
    return Old


@pytest.mark.parametrize("how", ["grad", "vmap", "vmap_rule", "jvp", "vjp", "jacrev",
                                 "untracked"])
def test_function_without_setup_context_is_refused_by_transforms(how):
    # ember ran old-style Functions under grad/jvp/vjp (and named vmap's missing rule)
    def case(L):
        Old = _old_style(L)
        x = L.ones(2, 3)
        if how == "vmap_rule":
            Old.generate_vmap_rule = True
        return {"grad": lambda: L.func.grad(lambda t: Old.apply(t).sum())(x),
                "vmap": lambda: L.func.vmap(Old.apply)(x),
                "vmap_rule": lambda: L.func.vmap(Old.apply)(x),
                "jvp": lambda: L.func.jvp(Old.apply, (x,), (x,)),
                "vjp": lambda: L.func.vjp(Old.apply, x),
                "jacrev": lambda: L.func.jacrev(Old.apply)(x[0]),
                "untracked": lambda: L.func.grad(
                    lambda t: t.sum() + Old.apply(L.ones(2)).sum())(x)}[how]()
    e, t = _both(case)
    assert e == t and "must override the setup_context staticmethod" in e[1]


@pytest.mark.parametrize("how", ["vectorize", "batched", "hessian"])
def test_old_style_function_still_runs_under_batched_backward(how):
    # torch's own batched backward (jacobian(vectorize=True), is_grads_batched) is no transform
    res = []
    for L in (ember, torch):
        Old = _old_style(L)
        x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        r = {"vectorize": lambda: L.autograd.functional.jacobian(Old.apply, x, vectorize=True),
             "batched": lambda: L.autograd.grad(Old.apply(x), x, L.eye(3),
                                                is_grads_batched=True)[0],
             "hessian": lambda: L.autograd.functional.hessian(lambda t: Old.apply(t).sum(),
                                                              x, vectorize=True)}[how]()
        res.append(_np(r))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6)


def _rule_fn(L, log):
    class Rule(L.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y, x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            return g1 * y + g2, g1 * x + g2

        @staticmethod
        def vmap(info, in_dims, x, y):
            log.append((info.batch_size, info.randomness, tuple(in_dims), tuple(x.shape),
                        tuple(y.shape), type(info).__name__))
            xd, yd = in_dims
            b = info.batch_size
            x = x.movedim(xd, 0) if xd is not None else x.unsqueeze(0).expand(b, *x.shape)
            y = y.movedim(yd, 0) if yd is not None else y.unsqueeze(0).expand(b, *y.shape)
            return Rule.apply(x, y), (0, 0)
    return Rule


@pytest.mark.parametrize("how", ["plain", "in_dims", "nested", "grad"])
def test_function_vmap_staticmethod_is_called(how):
    # ember ignored a Function's own vmap rule (it ran forward on the batched tensors) and
    # refused vmap(grad(f)) over any Function; torch calls the rule one level down
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(
        np.float32)
    res, logs = [], []
    for L in (ember, torch):
        log = []
        Rule = _rule_fn(L, log)
        X, Y = L.tensor(x), L.tensor(y)
        f = L.func.vmap
        r = {"plain": lambda: f(Rule.apply)(X, X * 2),
             "in_dims": lambda: f(Rule.apply, in_dims=(1, None))(X.t().contiguous(), X[0]),
             "nested": lambda: f(f(Rule.apply))(X, X),
             "grad": lambda: (f(L.func.grad(lambda a, b: Rule.apply(a, b)[0].sum()),
                                in_dims=(0, None))(X, Y),)}[how]()
        res.append([_np(t) for t in r])
        logs.append(log)
    assert logs[0] == logs[1]
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("bad", ["both", "single", "structure"])
def test_function_vmap_rule_errors_are_torchs(bad):
    def case(L):
        Rule = _rule_fn(L, [])
        if bad == "both":
            Rule.generate_vmap_rule = True
        elif bad == "single":
            Rule.vmap = staticmethod(lambda info, in_dims, x, y: x * y)
        else:
            Rule.vmap = staticmethod(lambda info, in_dims, x, y: ((x * y, x), (0, 0, 0)))
        return L.func.vmap(Rule.apply)(L.ones(2, 3), L.ones(2, 3))
    e, t = _both(case)
    assert e[0] == t[0]
    assert e[1].split(" Expected out_dims")[0] == t[1].split(" Expected out_dims")[0]


# ---------------------------------------------------------------- __torch_function__

def _two_subclasses(L):
    class A(L.Tensor):
        pass

    class B(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)
    return L.ones(2).as_subclass(A), L.ones(2).as_subclass(B)


def _iadd(a, b):
    a = a.clone()
    a += b
    return a


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a @ b,
                                _iadd, lambda a, b: a.add(b), lambda a, b: a.add_(b),
                                lambda a, b: a.matmul(b), lambda a, b: a.__add__(b),
                                lambda a, b: b.__radd__(a)])
def test_unrelated_subclasses_fall_back_to_pythons_operator_error(op):
    # every handler NotImplemented: torch's operators answer NotImplemented (Python raises
    # "unsupported operand type(s)"); ember raised the multiple-dispatch error from the
    # operator, and named methods 'torch._C.TensorBase.add' (torch: 'torch.Tensor.add')
    e, t = _both(lambda L: op(*_two_subclasses(L)))
    assert e == t


def test_overridable_functions_list_torchs_namespaces():
    import ember.nn.functional as F
    ov = ember.overrides.get_overridable_functions()
    tov = torch.overrides.get_overridable_functions()
    assert F.relu in ov[F] and F.softmax in ov[F] and ember.add in ov[ember]
    assert ember.linalg.norm in ov[ember.linalg] and ember.fft.fft in ov[ember.fft]
    assert ember.special.erf in ov[ember.special]
    assert ember.is_tensor not in ov[ember] and torch.is_tensor not in tov[torch]
    assert len(ov[F]) >= 0.9 * len(tov[torch.nn.functional])


def _mode_calls(L, build, shape):
    class Counter(L.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(getattr(func, "__name__", repr(func)))
            return func(*args, **(kwargs or {}))
    L.manual_seed(0)
    m = build(L.nn)
    m.eval()
    x = L.ones(shape)
    with Counter() as c:
        m(x)
    return c.calls


@pytest.mark.parametrize("build,shape", [
    (lambda nn: nn.Conv1d(2, 4, 3), (1, 2, 5)), (lambda nn: nn.Conv2d(2, 2, 3), (1, 2, 5, 5)),
    (lambda nn: nn.ConvTranspose1d(2, 2, 3), (1, 2, 5)),
    (lambda nn: nn.MaxPool1d(2), (1, 2, 6)), (lambda nn: nn.AvgPool2d(2), (1, 1, 4, 4)),
    (lambda nn: nn.Dropout(0.5), (3,)), (lambda nn: nn.Dropout2d(0.5), (1, 2, 3, 3))])
def test_function_mode_sees_a_modules_functional_once(build, shape):
    # Conv1d & co. keep F.conv1d as a class attribute, bound before ember.overrides wraps F:
    # a mode saw 'dim', 'shape' getters and 'convolution' where torch sees 'conv1d'
    assert _mode_calls(ember, build, shape) == _mode_calls(torch, build, shape)


def _seen_and_types(L):
    seen = []

    class S(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in ("grad", "backward"):
                seen.append((func.__name__, [type(a).__name__ for a in args],
                             sorted((k, v if v is None or isinstance(v, (bool, int)) else
                                     type(v).__name__) for k, v in (kwargs or {}).items())))
            return super().__torch_function__(func, types, args, kwargs)
    L.manual_seed(0)
    leaf = L.randn(3).as_subclass(S).requires_grad_()
    plain = L.randn(3, requires_grad=True)
    out = [type(g).__name__ for g in L.autograd.grad((leaf * 3).sum(), leaf)]
    out += [type(g).__name__ for g in L.autograd.grad((plain * leaf).sum(), [plain, leaf],
                                                       retain_graph=True)]
    out += [type(g).__name__ for g in L.autograd.grad(leaf.exp(), leaf, L.ones(3))]
    out += [type(g).__name__ for g in L.autograd.grad(
        [(leaf * 3).sum()], [leaf, plain], allow_unused=True)]
    L.autograd.backward([(leaf * 3).sum()])
    out.append(type(leaf.grad).__name__)
    return out, [s for s in seen if s[0] == "grad" or s[1] == ["tuple"]]


def test_autograd_grad_and_backward_take_part_in_torch_function():
    # torch.autograd.grad/backward offer the call to the tensors' handlers: the default one
    # returns gradients of the subclass (ember returned plain tensors, and no handler saw it)
    assert _seen_and_types(ember) == _seen_and_types(torch)


def _amp_log(L):
    log = []

    def state(tag, t):
        log.append((tag, str(t.dtype), L.is_autocast_enabled("cpu"),
                    str(L.get_autocast_dtype("cpu"))))

    class MM(L.autograd.Function):
        @staticmethod
        @L.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            state("fwd", a)
            return a.mm(b)

        @staticmethod
        @L.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            state("bwd", g)
            return g.mm(b.t()), a.t().mm(g)     # float32 operands and a low-precision g

    class Cast(L.autograd.Function):
        @staticmethod
        @L.amp.custom_fwd(device_type="cpu", cast_inputs=L.float32)
        def forward(ctx, a):
            state("cfwd", a)
            return a * 2

        @staticmethod
        @L.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            state("cbwd", g)
            return g
    a = L.ones(3, 4, requires_grad=True)
    b = L.full((4, 2), 0.5, requires_grad=True)
    with L.autocast("cpu", dtype=L.float16):
        o = MM.apply(a, b)
        c = Cast.apply(a.half())
        with L.autocast("cpu", enabled=False):
            state("off", a)
        with L.autocast("cpu"):
            state("inner", a)
    (o.float().sum() + c.sum()).backward()
    o = MM.apply(a, b)
    with L.autocast("cpu", dtype=L.bfloat16):      # a region around the backward only
        o.sum().backward()
    log.append(str(a.grad.dtype))
    return log


def test_custom_bwd_runs_backward_in_the_forwards_autocast_region():
    # custom_bwd returned the backward as it was (no autocast: a float32/bfloat16 mm failed);
    # autocast(dtype=None) took the device's default dtype, torch the current one
    assert _amp_log(ember) == _amp_log(torch)


@pytest.mark.parametrize("reentrant", [False, True])
def test_non_reentrant_checkpoint_saves_its_inputs_through_outer_hooks(reentrant):
    # ember's non-reentrant checkpoint kept its arguments in a closure: hooks around the call
    # (offloading, counting, quantizing) saw nothing; torch packs each tensor argument once
    # and unpacks it at every recomputation
    res = []
    for L in (ember, torch):
        L.manual_seed(0)
        X = L.randn(4, 3, requires_grad=True)
        W = L.randn(3, 2)
        packed, unpacked = [], []
        with L.autograd.graph.saved_tensors_hooks(
                lambda t: packed.append(tuple(t.shape)) or ("p", t),
                lambda t: unpacked.append(tuple(t[1].shape)) or t[1]):
            out = L.utils.checkpoint.checkpoint(lambda x, w, s: (x @ w).tanh() * s, X, W,
                                                3.0, use_reentrant=reentrant)
        if reentrant:
            out.sum().backward()
        else:
            out.sum().backward(retain_graph=True)
            out.sum().backward()
        res.append((packed, unpacked, _np(X.grad)))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-5)


def _mulsin(L):
    class MulSin(L.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w):
            return x.sin() * w, x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.k = 2.0

        @staticmethod
        def backward(ctx, g1, g2):
            x, w = ctx.saved_tensors
            return g1 * x.cos() * w + ctx.k * g2, g1 * x.sin()
    return MulSin


@pytest.mark.parametrize("how", ["x", "xw", "both_batched", "w_only", "nested", "values"])
def test_generated_vmap_rule_under_vmap_of_grad(how):
    # vmap(grad(f)) over a generate_vmap_rule Function raised NotImplementedError in ember;
    # the node is now recorded beneath the batching (per-sample gradients)
    rng = np.random.default_rng(1)
    x, w, wb = (rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3,), (4, 3)))
    res = []
    for L in (ember, torch):
        MulSin = _mulsin(L)

        def f(a, b):
            p, q = MulSin.apply(a, b)
            return (p * q).sum()
        X, W, WB = L.tensor(x), L.tensor(w), L.tensor(wb)
        v, g = L.func.vmap, L.func.grad
        r = {"x": lambda: v(g(f), in_dims=(0, None))(X, W),
             "xw": lambda: v(g(f, argnums=(0, 1)), in_dims=(0, None))(X, W),
             "both_batched": lambda: v(g(f, argnums=(0, 1)))(X, WB),
             "w_only": lambda: v(g(f, argnums=1), in_dims=(0, None))(X, W),
             "nested": lambda: v(v(g(f), in_dims=(0, None)), in_dims=(0, None))(
                 X.view(2, 2, 3), W),
             "values": lambda: v(g(lambda a: MulSin.apply(a, W)[0].sum()))(X)}[how]()
        res.append([_np(t) for t in (r if isinstance(r, tuple) else (r,))])
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_grad_of_vmap_over_a_function_refuses_instead_of_zeros():
    # grad(lambda w: vmap(f)(X, w).sum()) gave zero gradients (the node sat on the batched
    # output's wrapper); torch computes them, ember now says it cannot
    MulSin = _mulsin(ember)
    X, W = ember.ones(4, 3), ember.ones(3)

    def f(a, b):
        p, q = MulSin.apply(a, b)
        return (p * q).sum()
    with pytest.raises(NotImplementedError, match="unbatched input that requires grad"):
        ember.func.grad(lambda w: ember.func.vmap(f, in_dims=(0, None))(X, w).sum())(W)
