"""torch semantics checked against torch itself (round 3): Tensor subclasses and the
``__torch_function__`` protocol, deepcopy version counters, ``set_`` past a storage's end,
overlapping in-place writes, complex32 promotion, sparse ``smm``/``hspmm``,
``allow_mutation_on_saved_tensors``, gradcheck's backward calls."""
import copy
import io
import pickle

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, *args):
    """``fn(*args)``, or the class and text of the exception it raised."""
    try:
        return ("ok", fn(*args))
    except Exception as e:                # noqa: BLE001 - the class and text are compared
        return ("error", type(e).__name__, str(e))


def _same(fn):
    """Run ``fn(L)`` with torch and with ember; the outcomes must be equal."""
    assert _outcome(fn, ember) == _outcome(fn, torch)


# ------------------------------------------------------------ 1. Tensor subclasses

def _sub(L):
    class My(L.Tensor):
        pass
    return My


def _kinds(r):
    """A result as type names (tuples element-wise; namedtuples keep their own name)."""
    if isinstance(r, tuple):
        return (type(r).__name__, [type(x).__name__ for x in r])
    return type(r).__name__


_KEEPS_SUBCLASS = {
    "detach": lambda x: x.detach(),
    "data": lambda x: x.data,
    "new_zeros": lambda x: x.new_zeros(2),
    "new_ones": lambda x: x.new_ones(2, 1),
    "new_full": lambda x: x.new_full((2,), 3.),
    "new_empty": lambda x: x.new_empty(2),
    "new_tensor": lambda x: x.new_tensor([1., 2.]),
    "max_dim": lambda x: x.max(0),
    "sort": lambda x: x.sort(),
    "topk": lambda x: x.topk(2),
    "to_float64": lambda x: x.to(x.new_tensor(1.).double().dtype),
    "T": lambda x: x.reshape(1, 3).T,
    "mT": lambda x: x.reshape(1, 3).mT,
    "getitem": lambda x: x[0],
    "split": lambda x: x.split(1),
    "clone": lambda x: x.clone(),
    "grad": lambda x: x.grad,
    "cpu": lambda x: x.cpu(),
    "type_as": lambda x: x.type_as(x.new_zeros(1, dtype=x.new_tensor(1).dtype)),
    "contiguous": lambda x: x.contiguous(),
}


@pytest.mark.parametrize("name", sorted(_KEEPS_SUBCLASS))
def test_subclass_survives(name):
    def run(L):
        L.manual_seed(0)
        x = L.randn(3).as_subclass(_sub(L))
        r = _KEEPS_SUBCLASS[name](x)
        vals = [t.tolist() for t in (r if isinstance(r, tuple) else (r,))
                if isinstance(t, L.Tensor) and name != "new_empty"]
        return _kinds(r), vals
    _same(run)


def test_subclass_grad_of_leaf_and_repr():
    def run(L):
        My = _sub(L)
        z = L.ones(3).as_subclass(My).requires_grad_()
        (z * 2).sum().backward()
        return (type(z).__name__, z.is_leaf, type(z.grad).__name__, z.grad.tolist(),
                repr(z.detach()), repr(z.max(0)))
    _same(run)


def test_subclass_pickle_and_save_keep_type_dict_and_version():
    def run(L):
        x = L.arange(3.).as_subclass(_sub(L))
        x.tag = "a"
        z = pickle.loads(pickle.dumps(x))
        buf = io.BytesIO()
        L.save({"x": x, "p": L.ones(2)}, buf)
        buf.seek(0)
        d = L.load(buf, weights_only=False)
        return [(type(t).__name__, t.tolist(), t.__dict__, t._version)
                for t in (z, d["x"], d["p"], pickle.loads(pickle.dumps(L.ones(1))))]
    _same(run)


def test_subclass_deepcopy_needs_new_empty():
    def run(L):
        class Own(L.Tensor):
            def new_empty(self, *a, **k):
                return super().new_empty(*a, **k).as_subclass(Own)
        y = L.ones(2).as_subclass(Own)
        y.foo = [1]
        c = copy.deepcopy(y)
        plain = _outcome(copy.deepcopy, L.ones(2).as_subclass(_sub(L)))
        return type(c).__name__, c.foo, c.foo is y.foo, c._version, plain[:2], plain[-1][:60]
    _same(run)


def test_make_subclass_shares_memory_and_version():
    def run(L):
        My = _sub(L)
        w = L.ones(2)
        m = L.Tensor._make_subclass(My, w, True)
        m2 = L.Tensor._make_subclass(My, w)
        m2.add_(1)
        n = L.Tensor._make_subclass(My, L.ones(2, requires_grad=True) * 2)
        return (type(m).__name__, m.requires_grad, m.is_leaf, w.tolist(), m2._version,
                w._version, type(n).__name__, n.requires_grad, n.grad_fn)
    _same(run)


def test_parameter_of_a_subclass():
    def run(L):
        My = _sub(L)
        p = L.nn.Parameter(L.ones(2).as_subclass(My))
        q = L.nn.Parameter(L.ones(2).as_subclass(My), requires_grad=False)
        lin = L.nn.Linear(2, 2)
        lin.weight = L.nn.Parameter(L.ones(2, 2).as_subclass(My))
        out = lin(L.ones(2))
        return (type(p).__name__, isinstance(p, L.nn.Parameter), p.requires_grad, p.is_leaf,
                q.requires_grad, isinstance(L.ones(1).as_subclass(My), L.nn.Parameter),
                sorted(type(t).__name__ for t in lin.parameters()), type(out).__name__,
                out.tolist())
    _same(run)


def _logging(L, seen):
    class Log(L.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func.__name__, kwargs is None))
            return super().__torch_function__(func, types, args, kwargs or {})
    return Log


_SEEN = {
    "detach": lambda L, x: x.detach(),
    "data": lambda L, x: x.data,
    "shape": lambda L, x: x.shape,
    "size_dim_numel": lambda L, x: (x.size(), x.dim(), x.numel()),
    "len": lambda L, x: len(x),
    "requires_grad": lambda L, x: x.requires_grad,
    "new_zeros": lambda L, x: x.new_zeros(2),
    "mul": lambda L, x: x * 2,
    "sum_dim": lambda L, x: x.sum(0),
    "F.linear": lambda L, x: L.nn.functional.linear(x, L.ones(2, 3)),
    "F.relu": lambda L, x: L.nn.functional.relu(x),
    "Linear": lambda L, x: type(L.nn.Linear(3, 2)(x)).__name__,
    "stride": lambda L, x: x.stride(),
    "grad_set": lambda L, x: setattr(x, "grad", None),
    "repr": lambda L, x: repr(x),
    "deepcopy": lambda L, x: type(copy.deepcopy(x.detach())).__name__,
    "getitem_item": lambda L, x: x[0].item(),
    "setitem": lambda L, x: x.__setitem__(0, 2.),
    "eq": lambda L, x: x == 1,
    "rpow": lambda L, x: 2 ** x,
    "cat": lambda L, x: L.cat([x, L.ones(1)]),
    "stack": lambda L, x: L.stack([L.ones(3), x]),
    "chunk": lambda L, x: L.chunk(x, 3),
    "where": lambda L, x: L.where(x > 0, x, 0.),
    "T": lambda L, x: x.reshape(1, 3).T,
    "iter": lambda L, x: list(x),
}


@pytest.mark.parametrize("name", sorted(_SEEN))
def test_functions_seen_by_torch_function(name):
    def run(L):
        seen = []
        x = L.ones(3).as_subclass(_logging(L, seen))
        r = _SEEN[name](L, x)
        return _kinds(r), seen
    _same(run)


def test_mode_sees_tensor_methods_and_disable_torch_function():
    def run(L):
        seen = []

        class Mode(L.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append((func.__name__, [t.__name__ for t in types]))
                return func(*args, **(kwargs or {}))
        Log = _logging(L, [])
        lt = L.ones(2).as_subclass(Log)
        with Mode():
            L.ones(2).detach()
            L.ones(2).shape
            lt.sum()
            with L._C.DisableTorchFunction():
                r1 = type(lt + 1).__name__
                L.ones(1) + 1
        with L._C.DisableTorchFunctionSubclass():
            r2 = type(lt + 1).__name__
        return seen, r1, r2, L._C._is_torch_function_enabled()
    _same(run)


def test_metadata_tensor_and_overrides_helpers():
    def run(L):
        class MetadataTensor:
            def __init__(self, data, metadata=None):
                self._t = L.as_tensor(data)
                self._metadata = metadata

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                metadatas = [a._metadata for a in args if hasattr(a, "_metadata")]
                args = [getattr(a, "_t", a) for a in args]
                return MetadataTensor(func(*args, **(kwargs or {})), metadatas[0])
        m = MetadataTensor([[1, 2], [3, 4]], {"owner": "x"})
        t = L.tensor([[1, 2], [1, 2]])
        r = [L.add(t, m), L.mul(m, t), L.nn.functional.relu(m), L.sum(m)]
        O = L.overrides
        Log = _logging(L, [])
        return ([(x._t.tolist(), x._metadata) for x in r],
                O.is_tensor_like(m), O.is_tensor_like(t), O.is_tensor_like(1),
                O.has_torch_function((m,)), O.has_torch_function((t,)),
                O.has_torch_function((L.ones(1).as_subclass(Log),)),
                O.handle_torch_function(L.add, (m,), m, 1)._t.tolist(),
                O.get_default_nowrap_functions() == {L.Tensor._base.__get__,
                                                     L.Tensor.grad.__get__,
                                                     L.Tensor._grad.__get__},
                O.resolve_name(L.add), O.resolve_name(L.Tensor.add),
                O.resolve_name(L.nn.functional.relu))
    _same(run)


# ------------------------------------------------------------ 2. deepcopy of a view and base

def test_deepcopy_view_and_base_have_own_version_counters():
    def run(L):
        b = L.zeros(4)
        v = b[1:3]
        bb, vv = copy.deepcopy((b, v))
        out = [bb._version, vv._version, vv._base is None]
        vv.add_(1)
        out += [bb._version, vv._version, bb.tolist()]
        bb.mul_(2)
        out += [bb._version, vv._version, vv.tolist()]
        c = copy.deepcopy(v)
        out += [c._version, c.storage_offset(), c.untyped_storage().nbytes()]
        return out
    _same(run)


# ------------------------------------------------------------ 6. smm / hspmm

def _sparse_factor(L):
    i = L.tensor([[1, 1, 0], [0, 0, 2]])
    return L.sparse_coo_tensor(i, L.tensor([1., 2., 3.]), (2, 3))


def _coo_parts(r):
    return (str(r.layout), r.is_sparse, r.is_coalesced(), r.sparse_dim(),
            r.dense_dim(), tuple(r.shape), r._indices().tolist(), r._values().tolist(),
            r.to_dense().tolist())


@pytest.mark.parametrize("name", ["smm", "hspmm"])
def test_smm_hspmm_values_and_layout(name):
    def run(L):
        s, d = _sparse_factor(L), L.arange(6.).reshape(3, 2)
        f = getattr(L, name)
        ints = f(L.sparse_coo_tensor(s._indices(), L.tensor([1, 2, 3]), (2, 3)),
                 L.arange(6).reshape(3, 2))
        empty = f(L.sparse_coo_tensor(L.zeros(2, 0, dtype=L.long), L.zeros(0), (2, 3)), d)
        return (_coo_parts(f(s, d)), _coo_parts(f(s.double(), d.double())),
                str(ints.dtype), ints.to_dense().tolist(), tuple(empty._values().shape))
    _same(run)


@pytest.mark.parametrize("name", ["smm", "hspmm"])
@pytest.mark.parametrize("bad", ["dense_first", "1d", "inner", "dtype", "backward"])
def test_smm_hspmm_errors(name, bad):
    def run(L):
        s, d = _sparse_factor(L), L.arange(6.).reshape(3, 2)
        f = getattr(L, name)
        if bad == "dense_first":
            return f(d, d).layout == L.strided
        if bad == "1d":
            return f(s, L.ones(3))
        if bad == "inner":
            return f(s, L.ones(2, 2))
        if bad == "dtype":
            return f(s, d.double())
        r = f(s, d.requires_grad_())
        grad = (type(r.grad_fn).__name__, r.requires_grad)
        r.to_dense().sum().backward()
        return grad
    if bad == "dense_first" and name == "hspmm":      # torch's text lists its backends
        with pytest.raises(NotImplementedError, match="hspmm"):
            run(ember)
        return
    _same(run)


def test_smm_is_a_method():
    assert ember.Tensor.smm is not None and not hasattr(ember.Tensor, "hspmm")
    s = _sparse_factor(ember)
    assert s.smm(ember.ones(3, 2)).to_dense().tolist() == [[3., 3.], [3., 3.]]


# ------------------------------------------------------------ 8. gradcheck's calls

def _counted(L, log, materialize=True):
    class Sq(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            log.append("f")
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            log.append("b" if g is not None else "b(None)")
            x, = ctx.saved_tensors
            return None if g is None else 2 * x * g
    return Sq


class _TwoOut:
    @staticmethod
    def make(L, log):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                log.append("f")
                ctx.save_for_backward(x, y)
                return x * y, x + y

            @staticmethod
            def backward(ctx, g1, g2):
                log.append("b")
                x, y = ctx.saved_tensors
                return g1 * y + g2, g1 * x + g2
        return Two


@pytest.mark.parametrize("case", ["default", "no_undefined", "fast", "batched", "no_materialize",
                                  "two_outputs", "gradgrad"])
def test_gradcheck_calls_forward_and_backward_as_torch(case):
    def run(L):
        log = []
        x = L.tensor([1., 2., 3.], dtype=L.double, requires_grad=True)
        gc = L.autograd.gradcheck
        if case == "two_outputs":
            y = L.tensor([3.], dtype=L.double, requires_grad=True)
            ok = gc(_TwoOut.make(L, log).apply, (x, y))
        elif case == "gradgrad":
            ok = L.autograd.gradgradcheck(_counted(L, log).apply, (x,))
        else:
            f = _counted(L, log, case != "no_materialize").apply
            kw = {"no_undefined": {"check_undefined_grad": False}, "fast": {"fast_mode": True},
                  "batched": {"check_batched_grad": True}}.get(case, {})
            ok = gc(f, (x,), **kw)
        return ok, "".join(s[0] if s != "b(None)" else "n" for s in log)
    _same(run)


# ------------------------------------------------------------ 4. overlapping writes

def _b(L, n=8):
    return L.arange(float(n))


_OVERLAPS = {
    "mask_value_overlaps": lambda L, b: b.__setitem__(b > 3, b[:4]),
    "mask_value_inside": lambda L, b: b.__setitem__(b > 3, b[4:]),
    "slice_partial": lambda L, b: b.__setitem__(slice(2, 6), b[:4]),
    "slice_disjoint": lambda L, b: b.__setitem__(slice(4, None), b[:4]),
    "slice_same": lambda L, b: b.__setitem__(slice(4, None), b[4:]),
    "index_put_value": lambda L, b: b.__setitem__(L.tensor([4, 5, 6, 7]), b[:4]),
    "index_put_whole": lambda L, b: b.__setitem__(L.tensor([0, 1]), b[0:2]),
    "index_put_strided": lambda L, b: b.__setitem__(L.tensor([0, 2, 4, 6]), b[1::2].clone()),
    "index_put_indices": lambda L, b: b.long().__setitem__(
        (lambda c: c[:2])(L.arange(8)), 5),
    "index_copy_": lambda L, b: b.index_copy_(0, L.tensor([4, 5, 6, 7]), b[:4]),
    "index_add_": lambda L, b: b.index_add_(0, L.tensor([4, 5, 6, 7]), b[:4]),
    "scatter_": lambda L, b: b.scatter_(0, L.tensor([4, 5, 6, 7]), b[:4]),
    "scatter_add_": lambda L, b: b.scatter_add_(0, L.tensor([4, 5, 6, 7]), b[:4]),
    "put_": lambda L, b: b.put_(L.tensor([4, 5, 6, 7]), b[:4]),
    "copy_partial": lambda L, b: b[2:6].copy_(b[:4]),
    "copy_self": lambda L, b: b.copy_(b),
    "add_partial": lambda L, b: b[2:6].add_(b[:4]),
    "add_self": lambda L, b: b.add_(b),
    "add_0d_view_of_self": lambda L, b: b.add_(b[0]),
    "add_0d_view_outside": lambda L, b: b[1:].add_(b[0]),
    "square_transposed": lambda L, b: (lambda m: m.add_(m.t()))(b[:4].view(2, 2)),
    "add_strided": lambda L, b: b[::2].add_(b[1::2]),
    "lerp_": lambda L, b: b[2:6].lerp_(b[:4], 0.5),
    "addcmul_": lambda L, b: b[2:6].addcmul_(b[:4], L.ones(4)),
    "clamp_": lambda L, b: b[2:6].clamp_(min=b[:4]),
    "pow_": lambda L, b: b[1:5].pow_(b[:4]),
    "neg_out": lambda L, b: L.neg(b[:4], out=b[2:6]),
    "add_out_partial": lambda L, b: L.add(b[:4], 1, out=b[2:6]),
    "mul_out_same": lambda L, b: L.mul(b, 2, out=b),
    "cat_out": lambda L, b: L.cat([b[:2], b[2:4]], out=b[2:6]),
    "index_select_out": lambda L, b: L.index_select(b, 0, L.tensor([0, 1]), out=b[1:3]),
    "masked_fill_": lambda L, b: b.masked_fill_(b > 5, b[0]),
    "fill_": lambda L, b: b[2:6].fill_(b[0]),
    "detach_partial": lambda L, b: b.detach()[2:6].add_(b[:4]),
    "rows": lambda L, b: b.view(4, 2)[1:].add_(b.view(4, 2)[:-1]),
}


@pytest.mark.parametrize("name", sorted(_OVERLAPS))
def test_overlapping_writes_as_torch(name):
    def run(L):
        b = _b(L)
        _OVERLAPS[name](L, b)
        return b.tolist()
    _same(run)


# ------------------------------------------------------------ 5. float16 with complex

def _c32_value(r):
    if not hasattr(r, "dtype"):
        return r
    s = str(r.dtype)
    return s, (r.to(r.new_ones(1).cfloat().dtype) if s == "torch.complex32" else r).tolist()


_HALF_COMPLEX = {
    "add_scalar": lambda L, h: h + 1j,
    "radd_scalar": lambda L, h: 1j + h,
    "mul_scalar": lambda L, h: h * (1 + 2j),
    "sub_scalar": lambda L, h: h - 1j,
    "div_scalar": lambda L, h: h / 1j,
    "add_0d_complex": lambda L, h: h + L.tensor(1j),
    "add_0d_complex128": lambda L, h: h + L.tensor(1j, dtype=L.complex128),
    "add_complex_tensor": lambda L, h: h + L.tensor([1j, 2j]),
    "0d_half_scalar": lambda L, h: h[0] + 1j,
    "0d_half_0d_complex": lambda L, h: h[0] + L.tensor(1j),
    "bfloat16": lambda L, h: h.bfloat16() + 1j,
    "float32": lambda L, h: h.float() + 1j,
    "int": lambda L, h: h.long() + 1j,
    "result_type": lambda L, h: L.result_type(h, 1j),
    "promote_types": lambda L, h: L.promote_types(L.float16, L.complex64),
    "add_alpha": lambda L, h: L.add(h, 1j, alpha=2),
    "where": lambda L, h: L.where(h > 1, h, 1j),
    "inplace": lambda L, h: h.clone().add_(1j),
    "c_add": lambda L, h: (h + 1j) + (h + 1j),
    "c_mul": lambda L, h: (h + 1j) * (h + 1j),
    "c_div": lambda L, h: (h + 1j) / (h + 1j),
    "c_abs": lambda L, h: (h + 1j).abs(),
    "c_real": lambda L, h: (h + 1j).real,
    "c_sum": lambda L, h: (h + 1j).sum(),
    "c_exp": lambda L, h: (h + 1j).exp(),
    "c_conj": lambda L, h: (h + 1j).conj(),
    "c_plus_float": lambda L, h: (h + 1j) + 1.5,
    "c_plus_half": lambda L, h: (h + 1j) + h,
    "c_plus_float32": lambda L, h: (h + 1j) + L.ones(2),
    "c_eq": lambda L, h: (h + 1j) == (h + 1j),
    "c_cat": lambda L, h: L.cat([h + 1j, h + 1j]),
    "c_mul_": lambda L, h: (h + 1j).mul_(2),
    "c_pow": lambda L, h: (h + 1j) ** 2,
    "c_repr": lambda L, h: repr(h + 1j),
    "c_dot": lambda L, h: (h + 1j) @ (h + 1j),
    "c_mv": lambda L, h: (h + 1j).expand(2, 2) @ (h + 1j),
    "c_mm": lambda L, h: (h + 1j).expand(2, 2) @ (h + 1j).expand(2, 2),
    "c_bmm": lambda L, h: (h + 1j).expand(2, 2, 2) @ (h + 1j).expand(2, 2, 2),
}


@pytest.mark.parametrize("name", sorted(_HALF_COMPLEX))
def test_float16_with_complex_is_complex32(name):
    import warnings

    def run(L):
        h = L.tensor([1., 2.], dtype=L.float16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _HALF_COMPLEX[name](L, h)
        return _c32_value(r) if hasattr(r, "dtype") and hasattr(r, "tolist") else repr(r)
    _same(run)


# ------------------------------------------------------------ 7. allow_mutation_on_saved

def _rounded(v):
    return [round(x, 5) for x in v] if isinstance(v, list) else v


_MUTATIONS = {
    "basic": lambda L, x: (lambda y: (lambda z: (y.mul_(2), z.sum().backward()))(y * y))(
        x.clone()),
    "view": lambda L, x: (lambda y: (lambda z: (y[:2].mul_(10), z.sum().backward()))(y * y))(
        x.clone()),
    "saved_result": lambda L, x: (lambda y: (lambda w: (y.add_(1), w.sum().backward()))(
        y.exp()))(x * 1),
    "leaf_no_grad": lambda L, x: (lambda z: (_no_grad_mul(L, x), z.sum().backward()))(x * x),
    "twice": lambda L, x: (lambda y: (lambda z: (y.mul_(2), y.mul_(3),
                                                 z.sum().backward()))(y * y))(x.clone()),
    "retain": lambda L, x: (lambda y: (lambda z: (y.mul_(2), z.sum().backward(retain_graph=True),
                                                  z.sum().backward()))(y * y))(x.clone()),
    "data": lambda L, x: (lambda y: (lambda z: (y.data.mul_(2), z.sum().backward()))(y * y))(
        x.clone()),
    "setitem": lambda L, x: (lambda y: (lambda z: (y.__setitem__(0, 5.),
                                                   z.sum().backward()))(y.sin()))(x.clone()),
}


def _no_grad_mul(L, x):
    with L.no_grad():
        x.mul_(2)


@pytest.mark.parametrize("name", sorted(_MUTATIONS))
def test_allow_mutation_on_saved_tensors(name):
    def run(L):
        with L.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            x = L.tensor([1., 2., 3.], requires_grad=True)
            _MUTATIONS[name](L, x)
            return type(ctx).__name__, _rounded(x.grad.tolist()), _rounded(x.tolist())
    _same(run)


@pytest.mark.parametrize("case", ["outside", "backward_after_exit", "nested", "kind"])
def test_allow_mutation_on_saved_tensors_errors(case):
    def run(L):
        amst = L.autograd.graph.allow_mutation_on_saved_tensors
        x = L.tensor([1., 2., 3.], requires_grad=True)
        if case == "kind":
            return type(amst()).__name__
        if case == "nested":
            with amst():
                with amst():
                    pass
        if case == "outside":
            y = x.clone()
            z = y * y
            y.mul_(2)
            z.sum().backward()
        with amst():
            y = x.clone()
            z = y.sin()
            y.add_(1)
        z.sum().backward()
    _same(run)


# ------------------------------------------------------------ 3. set_ past a storage's end

def _known(t, n):
    """The first ``n`` elements (the rest of a grown storage is uninitialized in torch)."""
    return t.reshape(-1)[:n].tolist()


_SET_GROWS = {
    "offset_past_end": lambda L: (lambda s, t: (t.set_(s, 2, (4,), (1,)), s.nbytes(),
                                                t.untyped_storage().nbytes(), tuple(t.shape),
                                                t.storage_offset(), t._version,
                                                _known(t, 2)))(
        L.arange(4.).untyped_storage(), L.empty(0)),
    "owner_follows": lambda L: (lambda base, t: (
        t.set_(base.untyped_storage(), 0, (3, 3), (3, 1)),
        base.untyped_storage().nbytes(), t.untyped_storage().nbytes(),
        base.untyped_storage().data_ptr() == t.untyped_storage().data_ptr(),
        base.add_(1), _known(t, 4), base.tolist(), base._version, t._version))(
        L.arange(4.), L.empty(0)),
    "views_follow": lambda L: (lambda b: (lambda v: (
        L.empty(0).set_(b.untyped_storage(), 2, (4,)), b.untyped_storage().nbytes(),
        v.untyped_storage().nbytes(), v.data_ptr() - b.data_ptr(), b.fill_(7), v.tolist(),
        v.storage_offset(), b.storage_offset()))(b[1:]))(L.arange(4.)),
    "other_dtype": lambda L: (lambda u, s: (u.set_(s, 3, (3,)), s.nbytes(),
                                            u.untyped_storage().nbytes(), _known(u, 1)))(
        L.empty(0, dtype=L.int32), L.arange(4.).untyped_storage()),
    "from_numpy": lambda L: L.empty(0, dtype=L.float64).set_(
        L.from_numpy(__import__("numpy").arange(4.)).untyped_storage(), 0, (8,)),
    "negative_offset": lambda L: L.empty(0).set_(L.arange(4.).untyped_storage(), -1, (2,)),
    "negative_stride": lambda L: L.empty(0).set_(L.arange(4.).untyped_storage(), 0, (2,),
                                                  (-1,)),
    "fits": lambda L: (lambda s: (L.empty(0).set_(s, 1, (3,)).tolist(), s.nbytes()))(
        L.arange(4.).untyped_storage()),
}


@pytest.mark.parametrize("name", sorted(_SET_GROWS))
def test_set_past_storage_end_grows_it(name):
    def run(L):
        r = _SET_GROWS[name](L)
        return [x for x in r if not hasattr(x, "shape")] if isinstance(r, tuple) else \
            r.tolist()
    _same(run)


# ------------------------------------------------------------ 9. on the way

def test_parameter_of_a_subclass_repr():
    def run(L):
        class LongName(L.Tensor):
            pass
        p = L.nn.Parameter(L.ones(2, 2).as_subclass(LongName))
        q = L.nn.Parameter(L.ones(2).as_subclass(LongName), requires_grad=False)
        t = L.ones(2)
        t._is_param = True
        return repr(p), str(q), repr(t), repr(L.nn.Parameter(L.ones(1)))
    _same(run)


def test_training_loop_on_a_logging_subclass_sees_torchs_calls():
    def run(L):
        import collections
        seen = collections.Counter()

        class Log(L.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen[func.__name__] += 1
                return super().__torch_function__(func, types, args, kwargs or {})
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 2))
        x = L.randn(16, 4).as_subclass(Log)
        y = L.tensor([0, 1] * 8)
        opt = L.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            out = model(x)
            loss = L.nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
        return type(out).__name__, type(loss).__name__, round(loss.item(), 4), sorted(seen.items())
    _same(run)


def test_data_of_a_view_has_its_own_version_counter():
    def run(L):
        x = L.arange(6.).reshape(2, 3)[1]
        d = x.data
        out = [d._version, d.storage_offset(), d.untyped_storage().nbytes(),
               d.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()]
        d.add_(1)
        out += [d._version, x._version, x.tolist(), d.is_leaf, d.requires_grad]
        x.add_(1)
        return out + [d._version, x._version, d.tolist()]
    _same(run)


def test_pickle_and_copy_of_a_view_keep_its_storage():
    def run(L):
        x = L.arange(6.).reshape(2, 3)
        v = pickle.loads(pickle.dumps(x[1]))
        e = pickle.loads(pickle.dumps(L.ones(3).expand(2, 3)))
        c = copy.copy(x[1])
        r = [v.tolist(), v._version, v.storage_offset(), v.untyped_storage().nbytes(),
             v.stride(), e.stride(), e.tolist(), c.data_ptr() == x[1].data_ptr(), c._version]
        v.add_(1)
        return r + [v.tolist(), v._version]
    _same(run)


def test_torch_functions_on_a_logging_subclass():
    def run(L):
        import warnings
        seen = []
        Log = _logging(L, seen)
        x = L.ones(3).as_subclass(Log)
        out = []
        for f in (lambda: L.tensor(x), lambda: L.as_tensor(x), lambda: L.is_tensor(x),
                  lambda: L.numel(x), lambda: L.zeros_like(x), lambda: L.result_type(x, 1),
                  lambda: L.broadcast_tensors(x, L.ones(1)), lambda: L.einsum("i,i->", x, x),
                  lambda: L.split(x, 1), lambda: L.unique(x), lambda: L.tensordot(x, x, 1)):
            seen.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = f()
            out.append((_kinds(r), [s[0] for s in seen]))
        return out
    _same(run)


def test_overrides_base_mode_and_testing_overrides():
    def run(L):
        O = L.overrides

        class M(O.BaseTorchFunctionMode):
            pass
        with M() as m:
            r = (L.ones(2) + 1).tolist()
            stack = O._get_current_function_mode_stack() == [m]
            n = O._len_torch_function_stack()
        d = O.get_testing_overrides()
        return r, stack, n, isinstance(d, dict), len(d) > 100, d[L.add](1, 2), L.Tensor.add in d
    _same(run)
