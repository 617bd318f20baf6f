"""Names torch 2.13 has that ember lacked (session 6, second batch), tested against torch:
nn.utils.parametrizations.orthogonal, conv_tbc, func.functionalize,
func.replace_all_batch_norm_modules_, autograd.variable, profiler names, datapipes."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


# ---- nn.utils.parametrizations.orthogonal -------------------------------------------------

def _holder(lib, w):
    """A module with one parameter ``weight`` equal to the array ``w``."""
    m = lib.nn.Module()
    m.weight = lib.nn.Parameter(lib.tensor(w))
    return m


def _orthogonal_pair(w, seed=1, **kwargs):
    tm, em = _holder(torch, w), _holder(ember, w)
    torch.manual_seed(seed)
    ember.manual_seed(seed)        # the completion of a thin matrix draws randn (same stream)
    torch.nn.utils.parametrizations.orthogonal(tm, **kwargs)
    ember.nn.utils.parametrizations.orthogonal(em, **kwargs)
    return tm, em


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 5)])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_values_and_gradients_match_torch(shape, orthogonal_map, use_trivialization):
    r = np.random.default_rng(sum(shape))
    w = r.standard_normal(shape).astype(np.float32)
    tm, em = _orthogonal_pair(w, orthogonal_map=orthogonal_map,
                              use_trivialization=use_trivialization)
    np.testing.assert_allclose(_np(em.parametrizations.weight.original),
                               _np(tm.parametrizations.weight.original), atol=1e-6)
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), atol=2e-6)
    c = r.standard_normal(shape).astype(np.float32)
    (tm.weight * torch.tensor(c)).sum().backward()
    (em.weight * ember.tensor(c)).sum().backward()
    np.testing.assert_allclose(em.parametrizations.weight.original.grad.numpy(),
                               tm.parametrizations.weight.original.grad.numpy(), atol=5e-6)
    q = _np(em.weight)
    small = min(shape[-2:])
    gram = q @ np.swapaxes(q, -1, -2) if shape[-2] < shape[-1] else np.swapaxes(q, -1, -2) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-5)


def test_orthogonal_layout_state_dict_and_training_match_torch():
    w = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    tm, em = _orthogonal_pair(w)
    assert list(em.state_dict()) == list(tm.state_dict()) == [
        "parametrizations.weight.original", "parametrizations.weight.0.base"]
    assert repr(em.parametrizations.weight[0]) == "_Orthogonal()"
    topt = torch.optim.SGD(tm.parameters(), lr=0.2)
    eopt = ember.optim.SGD(em.parameters(), lr=0.2)
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    for _ in range(3):
        for m, opt, lib in ((tm, topt, torch), (em, eopt, ember)):
            opt.zero_grad()
            ((lib.tensor(x) @ m.weight.T) ** 3).sum().backward()
            opt.step()
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), atol=1e-5)
    fresh = _holder(ember, np.zeros((5, 3), np.float32))
    ember.nn.utils.parametrizations.orthogonal(fresh)
    fresh.load_state_dict(em.state_dict())
    np.testing.assert_allclose(_np(fresh.weight), _np(em.weight), atol=1e-6)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "householder"])
def test_orthogonal_assignment_goes_through_right_inverse(orthogonal_map):
    w = np.random.default_rng(2).standard_normal((4, 2)).astype(np.float32)
    v = np.random.default_rng(3).standard_normal((4, 2)).astype(np.float32)
    for triv in (True, False):
        if orthogonal_map == "matrix_exp" and not triv:
            continue
        tm, em = _orthogonal_pair(w, orthogonal_map=orthogonal_map, use_trivialization=triv)
        torch.manual_seed(4)
        ember.manual_seed(4)
        tm.weight = torch.tensor(v)
        em.weight = ember.tensor(v)
        np.testing.assert_allclose(_np(em.weight), _np(tm.weight), atol=2e-6)
        np.testing.assert_allclose(_np(em.parametrizations.weight.original),
                                   _np(tm.parametrizations.weight.original), atol=1e-6)


def test_orthogonal_errors_match_torch():
    cases = [
        (lambda lib: lib.nn.Linear(3, 3), {"name": "bias"}, ValueError),
        (lambda lib: lib.nn.Linear(3, 3), {"name": "foo"}, ValueError),
        (lambda lib: lib.nn.Linear(3, 3), {"orthogonal_map": "foo"}, ValueError),
        (lambda lib: lib.nn.Linear(3, 3, dtype=lib.complex64),
         {"orthogonal_map": "householder"}, ValueError),
    ]
    for make, kwargs, cls in cases:
        with pytest.raises(cls) as t_err:
            torch.nn.utils.parametrizations.orthogonal(make(torch), **kwargs)
        with pytest.raises(cls) as e_err:
            ember.nn.utils.parametrizations.orthogonal(make(ember), **kwargs)
        assert str(e_err.value) == str(t_err.value)
    for lib in (torch, ember):
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3),
                                                     orthogonal_map="cayley",
                                                     use_trivialization=False)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = lib.eye(3)
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 4))
        with pytest.raises(ValueError, match="of shape"):
            m.weight = lib.zeros(4, 3)


def test_orthogonal_complex_is_unitary_like_torch():
    w = (np.arange(9).reshape(3, 3) * 0.1 + 1j * np.eye(3)).astype(np.complex64)
    tm, em = _orthogonal_pair(w)
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), atol=2e-6)


# ---- conv_tbc -------------------------------------------------------------------------------

@pytest.mark.parametrize("T,K,pad", [(7, 3, 1), (7, 3, 0), (5, 2, 2), (7, 2, -1), (2, 5, 1)])
@pytest.mark.parametrize("spelling", ["functional", "top"])
def test_conv_tbc_values_and_gradients_match_torch(T, K, pad, spelling):
    r = np.random.default_rng(T * 10 + K)
    arrays = [r.standard_normal(s).astype(np.float32) for s in ((T, 2, 3), (K, 3, 4), (4,))]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    es = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_fn = torch.conv_tbc if spelling == "top" else torch.nn.functional.conv_tbc
    e_fn = ember.conv_tbc if spelling == "top" else ember.nn.functional.conv_tbc
    ty, ey = t_fn(*ts, pad), e_fn(*es, pad)
    assert tuple(ey.shape) == tuple(ty.shape)
    np.testing.assert_allclose(_np(ey), _np(ty), atol=1e-5)
    c = r.standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(c)).sum().backward()
    (ey * ember.tensor(c)).sum().backward()
    for t, e in zip(ts, es):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-5)


@pytest.mark.parametrize("shapes,pad", [
    (((7, 3), (3, 3, 4), (4,)), 0), (((7, 2, 3), (3, 4), (4,)), 0),
    (((7, 2, 3), (3, 3, 4), (2,)), 0), (((7, 2, 3), (3, 5, 4), (4,)), 0),
    (((7, 2, 3), (3, 3, 4), (1, 4)), 0), (((2, 2, 3), (6, 3, 4), (4,)), 1),
    (((7, 2, 3), (3, 3, 4), (4,)), 1.5)])
def test_conv_tbc_errors_match_torch(shapes, pad):
    with pytest.raises(Exception) as t_err:
        torch.conv_tbc(*[torch.zeros(s) for s in shapes], pad)
    with pytest.raises(Exception) as e_err:
        ember.conv_tbc(*[ember.zeros(s) for s in shapes], pad)
    assert type(e_err.value) is type(t_err.value)
    assert str(e_err.value) == str(t_err.value)


# ---- utils.data datapipe names --------------------------------------------------------------

def _validated_pipes(lib):
    data = lib.utils.data

    class Ints(data.IterDataPipe[int]):
        def __init__(self, items):
            self.items = items

        @data.runtime_validation
        def __iter__(self):
            yield from self.items

    class Wrap(data.IterDataPipe):
        @data.argument_validation
        def __init__(self, n: int, source: data.IterDataPipe):
            self.source = source

    class WrapTyped(data.IterDataPipe):
        @data.argument_validation
        def __init__(self, source: data.IterDataPipe[int]):
            self.source = source

    return Ints, Wrap, WrapTyped


def test_datapipe_validation_decorators_agree_with_torch():
    for lib in (torch, ember):
        data = lib.utils.data
        Ints, Wrap, WrapTyped = _validated_pipes(lib)
        with data.runtime_validation_disabled():
            assert list(Ints([1, "a"])) == [1, "a"]
        def other(self):
            return iter(())

        with pytest.raises(TypeError, match="Can not decorate function other with "
                                            "'runtime_validation'"):
            data.runtime_validation(other)
        with pytest.raises(TypeError) as err:
            Wrap(1, [1, 2])
        assert str(err.value) == ("Expected argument 'source' as a IterDataPipe, but found "
                                  "<class 'list'>")
        WrapTyped([1])          # subscripted hints are not checked (torch 2.13)
        assert data.DFIterDataPipe()._is_dfpipe() is True
        assert issubclass(data.DFIterDataPipe, data.IterDataPipe)
        assert data.DataChunk([1, 2]) == [1, 2]


def test_runtime_validation_checks_items_in_ember():
    # torch 2.13 raises AttributeError ('type') here: ember checks the declared item type
    Ints, Wrap, _ = _validated_pipes(ember)
    assert list(Ints([1, 2])) == [1, 2]
    with pytest.raises(RuntimeError, match="Expected an instance as subtype of int"):
        list(Ints([1, "a"]))
    assert Wrap(1, Ints([3])).source is not None


# ---- func.functionalize ------------------------------------------------------------------

def _mutating(lib):
    def f(x):
        y = x.view(-1)
        y.add_(1)
        z = x * 2
        z.mul_(3)
        return y, z, 7
    return f


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_values_mutations_and_aliasing_match_torch(remove):
    got = {}
    for lib in (torch, ember):
        x = lib.arange(4.0).reshape(2, 2)
        y, z, seven = lib.func.functionalize(_mutating(lib), remove=remove)(x)
        same = lib.ones(2, 2)
        untouched = lib.ones(2, 2)
        got[lib] = dict(
            x=x.numpy().copy(), y=y.numpy().copy(), z=z.numpy().copy(), seven=seven,
            y_aliases_x=y.data_ptr() == x.data_ptr(),
            identity=lib.func.functionalize(lambda a: a, remove=remove)(same) is same,
            view_of_input=lib.func.functionalize(lambda a: a[1], remove=remove)(
                untouched).data_ptr() == untouched.data_ptr() + 2 * 4,
            y_is_view=y._base is not None)
    t, e = got[torch], got[ember]
    for key in t:
        np.testing.assert_array_equal(e[key], t[key], err_msg=key)


@pytest.mark.filterwarnings("ignore:There is a performance drop")
def test_functionalize_under_vmap_and_grad_matches_torch():
    def fill(lib, copy=True):
        def f(x):
            acc = lib.zeros(3)
            acc.add_(x * x)         # an unbatched target written with a batched value
            if not copy:            # (torch has no derivative for a batched copy_)
                return acc.sum()
            buf = lib.zeros(3)
            buf.copy_(x)
            return acc.sum() * buf
        return f

    x = np.arange(6.0).reshape(2, 3)
    results = []
    for lib in (torch, ember):
        values = lib.func.vmap(lib.func.functionalize(fill(lib)))(lib.tensor(x))
        grads = lib.func.vmap(lib.func.grad(lib.func.functionalize(fill(lib, copy=False))))(
            lib.tensor(x))
        mutated = lib.ones(3, 2)
        lib.func.vmap(lib.func.functionalize(lambda a: a.mul_(2)))(mutated)
        results.append((values.numpy(), grads.numpy(), mutated.numpy()))
    for t, e in zip(*results):
        np.testing.assert_allclose(e, t)
    with pytest.raises(RuntimeError, match="inplace arithmetic"):
        ember.func.vmap(fill(ember))(ember.tensor(x))      # plain vmap refuses the write


def test_functionalize_argument_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.func.functionalize(abs, "mutations")
    with pytest.raises(RuntimeError) as t_err:
        torch.func.functionalize(abs, remove="foo")
    with pytest.raises(RuntimeError) as e_err:
        ember.func.functionalize(abs, remove="foo")
    assert str(e_err.value).strip() == str(t_err.value).strip()


def test_functionalize_keeps_autograd_and_kwargs():
    x = ember.ones(2, requires_grad=True)

    def h(a, *, k):
        b = a.clone()
        b.mul_(k)
        return b.sum()
    out = ember.func.functionalize(h)(x, k=3.0)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert ember.func.functionalize(h).__name__ == "h"


# ---- func.replace_all_batch_norm_modules_, autograd.variable, profiler ----------------------

def test_replace_all_batch_norm_modules_matches_torch():
    seen = []
    for lib in (torch, ember):
        nn = lib.nn
        m = nn.Sequential(nn.BatchNorm1d(3), nn.Sequential(nn.BatchNorm2d(2)),
                          nn.InstanceNorm1d(3, track_running_stats=True), nn.SyncBatchNorm(2),
                          nn.Linear(2, 2))
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        seen.append([(type(s).__name__, getattr(s, "track_running_stats", None),
                      getattr(s, "running_mean", "-") is None,
                      sorted(dict(s.named_buffers(recurse=False))))
                     for s in m.modules()])
        x = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3) ** 1.5)
        m.eval()
        seen.append(np.round(m[0](x).detach().numpy(), 5).tolist())   # batch stats in eval
    assert seen[0] == seen[2] and seen[1] == seen[3]


def test_autograd_variable_and_profiler_names_match_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=r"autograd.variable\(...\) is deprecated"):
            lib.autograd.variable(lib.ones(2))
        assert lib.autograd.variable.Variable is lib.autograd.Variable
        assert lib.profiler.kineto_available() is True
    t_members = {k: int(v) for k, v in torch.profiler.DeviceType.__members__.items()}
    e_members = {k: v.value for k, v in ember.profiler.DeviceType.__members__.items()}
    assert e_members == t_members
    assert str(ember.profiler.DeviceType.CPU) == str(torch.profiler.DeviceType.CPU)


# ---- func.rearrange, func.debug_unwrap -----------------------------------------------------

_PATTERNS = [
    ("a b c -> c a b", {}), ("a b c -> a (b c)", {}), ("a b c -> (a b) c", {}),
    ("... c -> c ...", {}), ("a ... -> ... a", {}), ("a b (c d) -> a b c d", {"d": 2}),
    ("a b c -> a b c ()", {}), ("a b c -> a b c 1", {}), ("a b c -> a b (c 1)", {}),
    ("(a) b c -> a b c", {}), ("... -> (...)", {}), ("a_1 b c -> c a_1 b", {}),
    ("b (h h1) w -> b h (h1 w)", {"h1": 3}), ("a b c -> (c b) () a", {}),
    ("a b c ... -> ... c b a", {}), ("a b (c) -> a b c", {"c": 4})]


@pytest.mark.parametrize("pattern,lengths", _PATTERNS)
def test_rearrange_values_views_and_gradients_match_torch(pattern, lengths):
    x = np.arange(24.0).reshape(2, 3, 4)
    out = {}
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        r = lib.func.rearrange(t, pattern, **lengths)
        (r * lib.arange(float(r.numel())).reshape(r.shape)).sum().backward()
        out[lib] = (tuple(r.shape), r.detach().numpy().copy(), r.data_ptr() == t.data_ptr(),
                    t.grad.numpy().copy())
    for t_item, e_item in zip(out[torch], out[ember]):
        np.testing.assert_array_equal(e_item, t_item)


def test_rearrange_stacks_lists_and_runs_under_vmap():
    parts = [np.full((2, 3), float(i)) for i in range(4)]
    got = [lib.func.rearrange([lib.tensor(p) for p in parts], "s a b -> a (s b)").numpy()
           for lib in (torch, ember)]
    np.testing.assert_array_equal(got[1], got[0])
    x = np.arange(24.0).reshape(2, 3, 4)
    got = [lib.func.vmap(lambda v, lib=lib: lib.func.rearrange(v, "a b -> (b a)"))(
        lib.tensor(x)).numpy() for lib in (torch, ember)]
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.parametrize("pattern,lengths", [
    ("a b c 1 -> a b c", {}), ("a b c -> a b", {}), ("a b -> a b", {}), ("a b c -> a b d", {}),
    ("a a c -> a c", {}), ("a b c", {}), ("a b c -> a b c 2", {}), ("a b c -> a b c e", {"e": 1}),
    ("a b c -> a b c", {"q": 4}), ("a b c -> a (b c", {}), ("a b c -> a (b (c))", {}),
    ("a b c -> a b* c", {}), ("a b c -> (a ...) c", {}), ("a ... ... -> a", {}),
    ("a b (c d) -> a b c d", {"d": 3}), ("a b c -> a b c", {"b": 4}),
    ("a b (c d) -> a b c d", {})])
def test_rearrange_errors_match_torch(pattern, lengths):
    errors = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as err:
            lib.func.rearrange(lib.zeros(2, 3, 4), pattern, **lengths)
        errors.append(err.value)
    t_err, e_err = errors
    assert type(e_err).__name__ == type(t_err).__name__
    if type(t_err) is ValueError:
        assert str(e_err) == str(t_err)


def test_debug_unwrap_matches_torch():
    shapes = []
    for lib in (torch, ember):
        x = lib.zeros(2, 3, 4)
        assert lib.func.debug_unwrap(x) is x
        seen = []

        def f(v, lib=lib, seen=seen):
            seen.append((tuple(lib.func.debug_unwrap(v).shape),
                         tuple(lib.func.debug_unwrap(v, recurse=False).shape)))
            return v
        lib.func.vmap(lib.func.vmap(f))(x)
        shapes.append(seen)
    assert shapes[0] == shapes[1] == [((2, 3, 4), (3, 4))]
