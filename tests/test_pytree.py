"""ember.utils._pytree against torch.utils._pytree on the same structures (leaves, printed
specs, round trips, key paths, JSON, errors), and ember.func over registered pytree nodes."""
import collections
import dataclasses
import enum
import re
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import numpy as np
import pytest

import ember
import ember.utils._pytree as ep

torch = pytest.importorskip("torch")
tp = pytest.importorskip("torch.utils._pytree")

NT = namedtuple("NT", "a b")
Other = namedtuple("Other", "a b")


class TypedNT(collections.namedtuple("TypedBase", "x y")):
    pass


class Color(enum.Enum):
    RED = 1


def structures(lib):
    """Nested structures built the same way with ember or torch (``lib``)."""
    return [
        1, None, "s", [], (), {}, [1, 2], (1, (2, 3)), {"b": 1, "a": [2, (3,)]},
        [1, (2, 3), {"b": 4, "a": [5]}, None, OrderedDict(z=6, y=7)],
        defaultdict(list, {"k": 8, "j": [9]}), deque([9, 10], maxlen=3), deque([1]),
        NT(1, [2, 3]), TypedNT(4, 5), {1: "x", "a": 2, (1, 2): 3},
        lib.max(lib.ones(2, 2), 0), lib.Size([2, 3]), [[[1, [2, {"a": [3]}]]]],
        [set([1]), frozenset(), b"x", range(2), lib.ones(2)],
    ]


def _leaves_repr(leaves):
    return [repr(x.numpy()) if hasattr(x, "numpy") else repr(x) for x in leaves]


@pytest.mark.parametrize("i", range(len(structures(ember))))
def test_flatten_and_spec_print_match_torch(i):
    e, t = structures(ember)[i], structures(torch)[i]
    el, es = ep.tree_flatten(e)
    tl, ts = tp.tree_flatten(t)
    assert _leaves_repr(el) == _leaves_repr(tl)
    assert repr(es) == repr(ts) and str(es) == str(ts)
    assert ep.treespec_pprint(es) == tp.treespec_pprint(ts)
    assert (es.num_leaves, es.num_nodes, es.num_children, es.is_leaf()) == \
        (ts.num_leaves, ts.num_nodes, ts.num_children, ts.is_leaf())
    # round trip: same value and type back
    back = ep.tree_unflatten(el, es)
    assert repr(back) == repr(tp.tree_unflatten(tl, ts))
    assert type(back) is (tuple if type(e) is ember.Size else type(e))   # Size: a tuple back
    assert type(tp.tree_unflatten(tl, ts)) is (tuple if type(t) is torch.Size else type(t))
    if type(e) is not ember.Size:
        assert ep.tree_structure(back) == es and hash(ep.tree_structure(back)) == hash(es)
    # key paths
    ek = [(ep.keystr(k), repr(k)) for k, _ in ep.tree_leaves_with_path(e)]
    tk = [(tp.keystr(k), repr(k)) for k, _ in tp.tree_leaves_with_path(t)]
    assert ek == tk
    for k, v in ep.tree_leaves_with_path(e):
        assert ep.key_get(e, k) is v
    assert ep.tree_is_leaf(e) == tp.tree_is_leaf(t)


def test_builtin_spec_attributes():
    s = ep.tree_structure({"a": [1, 2], "b": 3})
    assert s.type is dict and s.context == ["a", "b"]
    assert s.child(0) == ep.tree_structure([1, 2]) and len(s.children()) == 2
    assert ep.tree_structure(NT(1, 2)).type is namedtuple
    assert ep.tree_structure(NT(1, 2)).context is NT
    assert ep.tree_structure(ember.max(ember.ones(2, 2), 0)).type is ember.return_types.max
    assert ep.tree_structure(defaultdict(list, a=1)).context == [list, ["a"]]
    leaf = ep.tree_structure(1)
    assert isinstance(leaf, ep.LeafSpec) and leaf.type is None and leaf.context is None
    with pytest.raises(IndexError):
        leaf.child(0)
    with pytest.warns(FutureWarning, match="children_specs"):
        assert s.children_specs == s.children()
    with pytest.warns(FutureWarning, match="LeafSpec"):
        assert ep.LeafSpec() == leaf
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.type = list
    # equality and hashing
    assert ep.tree_structure([1]) == ep.tree_structure([2])
    assert ep.tree_structure([1]) != ep.tree_structure((1,))
    assert ep.tree_structure({"a": 1, "b": 2}) != ep.tree_structure({"b": 2, "a": 1})
    assert ep.tree_structure(OrderedDict(a=1)) != ep.tree_structure({"a": 1})
    assert ep.tree_structure([1]) != [1]
    assert hash(ep.tree_structure(defaultdict(list, a=[1])))
    with pytest.raises(TypeError, match="unhashable"):
        hash(ep.TreeSpec(list, {"a": 1}, []))
    assert ep.TreeSpec(list, None, [ep.treespec_leaf()]) == ep.tree_structure([1])
    assert repr(ep.treespec_tuple([ep.treespec_leaf()] * 2)) == \
        repr(tp.treespec_tuple([tp.treespec_leaf()] * 2))
    assert repr(ep.treespec_dict({"b": ep.treespec_leaf()}, a=ep.treespec_leaf())) == \
        repr(tp.treespec_dict({"b": tp.treespec_leaf()}, a=tp.treespec_leaf()))


def test_namedtuple_and_structseq_tests():
    e_max, t_max = ember.max(ember.ones(2, 2), 0), torch.max(torch.ones(2, 2), 0)
    for name in ("is_namedtuple", "is_structseq", "is_namedtuple_instance",
                 "is_structseq_instance"):
        for e, t in ((NT(1, 2), NT(1, 2)), (e_max, t_max), ((1, 2), (1, 2)),
                     (TypedNT(1, 2), TypedNT(1, 2))):
            assert getattr(ep, name)(e) == getattr(tp, name)(t), (name, e)
    assert ep.is_namedtuple(NT) and not ep.is_namedtuple(ember.return_types.max)
    assert ep.is_structseq(ember.return_types.max) and ep.is_structseq_class(type(e_max))
    assert ep.is_namedtuple_class(NT) and not ep.is_namedtuple_class(tuple)


def test_is_leaf_arguments():
    tree = [1, (2, 3), [4, {"a": 5}]]
    is_tuple = lambda x: isinstance(x, tuple)             # noqa: E731
    for name in ("tree_leaves", "tree_structure", "tree_flatten"):
        assert repr(getattr(ep, name)(tree, is_leaf=is_tuple)) == \
            repr(getattr(tp, name)(tree, is_leaf=is_tuple))
    assert list(ep.tree_iter(tree, is_leaf=is_tuple)) == list(tp.tree_iter(tree, is_tuple))
    assert ep.tree_map(lambda x: x * 2, tree, is_leaf=is_tuple) == \
        tp.tree_map(lambda x: x * 2, tree, is_leaf=is_tuple)
    assert ep.tree_is_leaf([1], is_leaf=lambda x: isinstance(x, list))
    assert not ep.tree_is_leaf([1]) and ep.tree_is_leaf(None)
    assert ep.tree_any(is_tuple, tree, is_leaf=is_tuple)
    assert ep.tree_map_only(tuple, lambda x: "T", tree, is_leaf=is_tuple) == \
        [1, "T", [4, {"a": 5}]]
    e = ep.tree_leaves_with_path(tree, is_leaf=is_tuple)
    t = tp.tree_leaves_with_path(tree, is_leaf=is_tuple)
    assert repr(e) == repr(t)


def test_tree_map_family():
    a, b = [1, (2, 3), {"x": 4}], [10, (20, 30), {"x": 40}]
    assert ep.tree_map(lambda x, y: x + y, a, b) == tp.tree_map(lambda x, y: x + y, a, b)
    # rests may hold bigger subtrees under the first tree's leaves
    wide = [[3, 4], {"x": 5}]
    assert ep.tree_map(lambda x, y: (x, y), [1, 2], wide) == \
        tp.tree_map(lambda x, y: (x, y), [1, 2], wide)
    # dict-like nodes match by key, in either order and across dict types
    for first, rest in (({"a": 1, "b": 2}, {"b": 3, "a": 4}),
                        ({"a": 1}, OrderedDict(a=2)), (OrderedDict(a=2, b=1), {"b": 1, "a": 2}),
                        (deque([1]), deque([2], maxlen=4))):
        assert ep.tree_map(lambda x, y: (x, y), first, rest) == \
            tp.tree_map(lambda x, y: (x, y), first, rest)
    seen = []
    tree = [1, [2]]
    assert ep.tree_map_(seen.append, tree) is tree and seen == [1, 2]
    seen.clear()
    assert ep.tree_map_only_(int, seen.append, [1, "a", 2]) == [1, "a", 2] and seen == [1, 2]
    mixed = [1, 2.0, "s", (3,), True]
    for sel in (int, (int, str), int | float, lambda v: isinstance(v, float)):
        assert ep.tree_map_only(sel, lambda v: v * 2, mixed) == \
            tp.tree_map_only(sel, lambda v: v * 2, mixed)
    with pytest.raises(TypeError, match="Argument must be a type, a tuple of types, or a "
                                        "callable"):
        ep.tree_map_only(5, lambda v: v, mixed)

    @ep.map_only(int)
    def plus(v):
        """add 100"""
        return v + 100
    assert (plus(1), plus("a"), plus.__name__, plus.__doc__) == (101, "a", "plus", "add 100")
    t = [1, (2,), "a"]
    for name, args in (("tree_any", (lambda v: v == 2, t)), ("tree_all", (lambda v: v != 3, t)),
                       ("tree_any_only", (str, lambda v: v == "a", t)),
                       ("tree_all_only", (int, lambda v: v > 1, t)),
                       ("tree_all_only", (float, lambda v: False, t))):
        assert getattr(ep, name)(*args) == getattr(tp, name)(*args), name
    assert type(ep.tree_iter(t)).__name__ == "generator" and list(ep.tree_iter(t)) == [1, 2, "a"]
    assert ep.arg_tree_leaves(1, [2, 3], k={"a": 4}, j=5) == [1, 2, 3, 4, 5]
    got = ep.tree_map_with_path(lambda kp, v, w: (ep.keystr(kp), v, w), [1, {"a": 2}],
                                [3, {"a": 4}])
    assert got == [("[0]", 1, 3), {"a": ("[1]['a']", 2, 4)}]


def _no_addr(text):
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _same_error(efn, tfn):
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(type(te.value)) as ee:
        efn()
    assert _no_addr(str(ee.value)) == _no_addr(str(te.value))


@pytest.mark.parametrize("first,other", [
    ([1, (2, 3)], [1, (2,)]), ([1, (2, 3)], [1, [2, 3]]), ([1, (2, 3)], [1, (2, 3), 4]),
    ([1, (2, 3)], {"a": 1}), ({"a": 1, "b": 2}, {"b": 5, "c": 6}), ({"a": 1}, {"b": 3, "a": 4}),
    ([1], 5), ({"a": 1}, 5), (NT(1, 2), Other(3, 4)), ((1, 2), NT(1, 2)),
    ([1, 2], deque([1, 2])),
])
def test_structure_mismatch_errors(first, other):
    _same_error(lambda: ep.tree_map(lambda x, y: x, first, other),
                lambda: tp.tree_map(lambda x, y: x, first, other))
    _same_error(lambda: ep.tree_structure(first).flatten_up_to(other),
                lambda: tp.tree_structure(first).flatten_up_to(other))


def test_flatten_up_to_and_unflatten_errors():
    es, ts = ep.tree_structure([1, (2, 3), {"a": 4}]), tp.tree_structure([1, (2, 3), {"a": 4}])
    tree = [[1], ("a", "b"), {"a": {"c": 2}}]
    assert es.flatten_up_to(tree) == ts.flatten_up_to(tree)
    assert es.flatten_up_to([1, (2, 3), defaultdict(int, a=4)]) == [1, 2, 3, 4]
    _same_error(lambda: ep.tree_structure(ember.max(ember.ones(2, 2), 0)).flatten_up_to((1, 2)),
                lambda: tp.tree_structure(torch.max(torch.ones(2, 2), 0)).flatten_up_to((1, 2)))
    for bad in ([1, 2], [1, 2, 3, 4, 5]):
        _same_error(lambda: es.unflatten(bad), lambda: ts.unflatten(bad))
    assert es.unflatten(iter([7, 8, 9, 10])) == [7, (8, 9), {"a": 10}]
    _same_error(lambda: ep.tree_unflatten([1], [1]), lambda: tp.tree_unflatten([1], [1]))
    _same_error(lambda: ep.treespec_dumps([1]), lambda: tp.treespec_dumps([1]))


@pytest.mark.parametrize("tree,spec_tree", [
    (1, [1, (2, 3)]), ([1, 5], [1, (2, 3)]), ([1, 5, 6], [1, (2, 3)]), ((1, 5), [1, (2, 3)]),
    ({"a": 1}, {"a": [1, 2]}), ([1, None], [1, (2, 3)]), (None, [1, 2]),
    ({"a": 1, "b": 2}, {"b": [0, 0], "a": 0}), ({"b": 1, "a": 2}, {"b": 0, "a": [0, 0]}),
    ({"a": 1, "c": 2}, {"a": [0, 0], "b": 0}), (OrderedDict(a=1), {"a": [0, 0]}),
    ({"a": 1}, defaultdict(list, a=[0, 0])), (NT(1, 2), (0, 0)), ((1, 2), NT(0, 0)),
    (NT(1, 2), Other(0, 0)), (NT(1, [2]), NT(0, [0])), (deque([1, 2]), deque([0, 0], maxlen=3)),
    ({"a": {"x": 1, "y": 2}}, {"a": {"y": [0, 0, 0], "x": 0}}),
])
def test_broadcast_to_and_flatten(tree, spec_tree):
    assert ep._broadcast_to_and_flatten(tree, ep.tree_structure(spec_tree)) == \
        tp._broadcast_to_and_flatten(tree, tp.tree_structure(spec_tree))


def test_broadcast_is_leaf():
    is_tuple = lambda x: isinstance(x, tuple)             # noqa: E731
    assert ep._broadcast_to_and_flatten([7, 8], ep.tree_structure([(1, 2), 3], is_tuple),
                                        is_leaf=is_tuple) == [7, 8]


def test_keys():
    kp = (ep.MappingKey(1), ep.MappingKey((1, 2)), ep.GetAttrKey("q"), ep.SequenceKey(-1))
    tk = (tp.MappingKey(1), tp.MappingKey((1, 2)), tp.GetAttrKey("q"), tp.SequenceKey(-1))
    assert ep.keystr(kp) == tp.keystr(tk) == "[1][(1, 2)].q[-1]"
    assert [repr(k) for k in kp] == [repr(k) for k in tk]
    assert ep.keystr(()) == "" and ep.keystr(["x"]) == "x"
    assert ep.SequenceKey(1) == ep.SequenceKey(1) and len({ep.SequenceKey(1),
                                                           ep.SequenceKey(1)}) == 1
    assert (ep.SequenceKey(1).get([5, 6]), ep.MappingKey("a").get({"a": 3}),
            ep.GetAttrKey("real").get(3)) == (6, 3, 3)
    tree = {"a": [1, {"b": 5}]}
    assert ep.key_get(tree, (ep.MappingKey("a"), ep.SequenceKey(1), ep.MappingKey("b"))) == 5
    pairs, spec = ep.tree_flatten_with_path({"a": (1, 2)})
    assert spec == ep.tree_structure({"a": (1, 2)})
    assert repr(pairs) == repr(tp.tree_flatten_with_path({"a": (1, 2)})[0])


# ------------------------------------------------------------------------- registration

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


class Pair:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _point_flatten(p):
    return [p.x, p.y], "ctx"


def _pair_keys(p):
    return [(ep.GetAttrKey("x"), p.x), (ep.GetAttrKey("y"), p.y)], ["x", "y"]


def _pair_keys_t(p):
    return [(tp.GetAttrKey("x"), p.x), (tp.GetAttrKey("y"), p.y)], ["x", "y"]


@dataclasses.dataclass
class DC:
    a: object
    b: object = 3
    c: object = None


@dataclasses.dataclass
class DC2:
    a: object
    b: object = 1
    c: object = 2


class Const:
    def __init__(self, v):
        self.v = v

    def __eq__(self, o):
        return isinstance(o, Const) and o.v == self.v

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        return f"Const({self.v})"


@pytest.fixture(scope="module")
def registered():
    """The same classes registered in both libraries."""
    unflat = lambda v, c: Point(*v)                       # noqa: E731
    ep.register_pytree_node(Point, _point_flatten, unflat)
    tp.register_pytree_node(Point, _point_flatten, unflat)
    pair_unflat = lambda v, c: Pair(*v)                   # noqa: E731
    ep.register_pytree_node(Pair, lambda p: ([p.x, p.y], ["x", "y"]), pair_unflat,
                            serialized_type_name="tests.Pair", flatten_with_keys_fn=_pair_keys)
    tp.register_pytree_node(Pair, lambda p: ([p.x, p.y], ["x", "y"]), pair_unflat,
                            serialized_type_name="tests.Pair", flatten_with_keys_fn=_pair_keys_t)
    for lib in (ep, tp):
        lib.register_dataclass(DC)
        lib.register_dataclass(DC2, field_names=["a", "b"], drop_field_names=["c"],
                               serialized_type_name="tests.DC2")
        lib.register_constant(Const)
        lib._register_namedtuple(NT, serialized_type_name="tests.NT")
    yield
    for cls in (Point, Pair, DC, DC2, Const):
        ep._deregister_pytree_node(cls)
        try:
            tp._deregister_pytree_node(cls)
        except KeyError:        # torch keeps one entry for all unnamed types
            pass


def test_registered_nodes(registered):
    cases = [[Point(1, (2, 3))], {"q": Pair(1, [2, 3])}, DC(1, [2, 3]), DC(None, 2, 5),
             DC2(1, [2]), [Const(3), 1], NT(Const(1), DC(2))]
    for tree in cases:
        el, es = ep.tree_flatten(tree)
        tl, ts = tp.tree_flatten(tree)
        assert el == tl and repr(es) == repr(ts)
        assert _no_addr(ep.treespec_pprint(es)) == _no_addr(tp.treespec_pprint(ts))
        assert (es.num_leaves, es.num_nodes) == (ts.num_leaves, ts.num_nodes)
        assert _no_addr(repr(ep.tree_unflatten(el, es))) == \
            _no_addr(repr(tp.tree_unflatten(tl, ts)))
    assert ep.tree_structure([Const(3)]) != ep.tree_structure([Const(4)])
    assert ep.tree_unflatten([5], ep.tree_structure([Const(3), 1])) == [Const(3), 5]
    assert ep.is_constant_class(Const) and not ep.is_constant_class(Point)
    for tree in ({"q": Pair(1, [2, 3])}, DC(1, [2, 3]), [Const(3), 1], NT(1, [2])):
        assert repr(ep.tree_leaves_with_path(tree)) == repr(tp.tree_leaves_with_path(tree))
    # flatten_up_to compares the contexts of registered nodes
    _same_error(lambda: ep.tree_structure(DC(1, 2, 3)).flatten_up_to(DC(1, 2)),
                lambda: tp.tree_structure(DC(1, 2, 3)).flatten_up_to(DC(1, 2)))


def test_registration_errors(registered):
    _same_error(lambda: ep.tree_leaves_with_path([Point(1, 2)]),
                lambda: tp.tree_leaves_with_path([Point(1, 2)]))
    _same_error(lambda: ep.register_pytree_node(Point, _point_flatten, None),
                lambda: tp.register_pytree_node(Point, _point_flatten, None))
    _same_error(lambda: ep.register_dataclass(Point), lambda: tp.register_dataclass(Point))

    @dataclasses.dataclass
    class Three:
        a: object
        b: object
        c: object = 1
    with pytest.raises(ValueError, match=r"(?s)Missing fields in `field_names`: \{'b'\}"):
        ep.register_dataclass(Three, field_names=["a"], drop_field_names=["c"])
    with pytest.raises(ValueError, match="Unexpected fields in `field_names`: {'a'}"):
        ep.register_dataclass(Three, field_names=["a", "b", "c"], drop_field_names=["a"])

    class NoEq:
        pass

    class NoHash:
        def __eq__(self, o):
            return True
        __hash__ = None
    for cls in (NoEq, NoHash):
        _same_error(lambda: ep.register_constant(cls), lambda: tp.register_constant(cls))


# ------------------------------------------------------------------------- JSON

@pytest.mark.parametrize("tree", [
    1, None, [1, (2, 3), {"a": 4}, None], OrderedDict(z=6, y=7), defaultdict(list, {"k": 8}),
    defaultdict(collections.Counter, {"k": 8}), deque([9, 10], maxlen=3), deque([1]),
    {1: 2, "a": 3, (1, 2): 4}, {1.5: 1, None: 2, True: 3}, {Color.RED: 1},
    [[[1, [2, {"a": [3]}]]]],
])
def test_dumps_loads_match_torch(tree):
    es, ts = ep.tree_structure(tree), tp.tree_structure(tree)
    text = ep.treespec_dumps(es)
    assert text == tp.treespec_dumps(ts) == ep.treespec_dumps(es, 1)
    assert repr(ep.treespec_loads(tp.treespec_dumps(ts))) == repr(tp.treespec_loads(text))
    assert (ep.treespec_loads(text) == es) == (tp.treespec_loads(text) == ts)


def test_dumps_loads_size_and_registered(registered):
    es, ts = ep.tree_structure(ember.Size([2, 3])), tp.tree_structure(torch.Size([2, 3]))
    assert ep.treespec_dumps(es) == tp.treespec_dumps(ts)
    assert ep.treespec_loads(tp.treespec_dumps(ts)) == es
    for tree in ({"q": Pair(1, [2, 3])}, DC2(1, 2), NT(1, [2])):
        text = tp.treespec_dumps(tp.tree_structure(tree))
        assert ep.treespec_dumps(ep.tree_structure(tree)) == text
        assert ep.treespec_loads(text) == ep.tree_structure(tree)


def test_dumps_loads_errors(registered):
    Unnamed = namedtuple("Unnamed", "a")
    for tree_e, tree_t in ((Unnamed(1), Unnamed(1)), ([Point(1, 2)], [Point(1, 2)]),
                           (DC(1), DC(1)), ([Const(1)], [Const(1)]),
                           (ember.max(ember.ones(2, 2), 0), torch.max(torch.ones(2, 2), 0)),
                           ({ember.float32: 1}, {torch.float32: 1})):
        _same_error(lambda: ep.treespec_dumps(ep.tree_structure(tree_e)),
                    lambda: tp.treespec_dumps(tp.tree_structure(tree_t)))
    leaf = tp.treespec_dumps(tp.tree_structure(1))
    for text in ('[2, {}]', '[1, {"type": "foo.Bar", "context": "null", "children_spec": []}]',
                 '{"a": 1}',
                 '[1, {"type": "collections.namedtuple", "context": "x.Y", "children_spec": []}]'):
        _same_error(lambda: ep.treespec_loads(text), lambda: tp.treespec_loads(text))
    _same_error(lambda: ep.treespec_dumps(ep.tree_structure(1), protocol=2),
                lambda: tp.treespec_dumps(tp.tree_structure(1), protocol=2))
    assert ep.treespec_loads(leaf) == ep.tree_structure(1)


# ------------------------------------------------------------------------- ember.func

def _close(e, t):
    el, es = ep.tree_flatten(e)
    tl, ts = tp.tree_flatten(t)
    assert repr(es) == repr(ts)
    for a, b in zip(el, tl):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


X = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def test_vmap_over_registered_nodes(registered):
    E, T = ember.tensor(X), torch.tensor(X)
    cases = [
        (lambda p: Point(p.x * 2, p.y.sum()), dict(), lambda L, x: (Point(x, x + 1),)),
        (lambda p: p.x + p.y, dict(in_dims=(Point(0, None),)),
         lambda L, x: (Point(x, L.ones(2)),)),
        (lambda p: p.x + p.y, dict(in_dims=(Point(0, 1),)), lambda L, x: (Point(x, x.T),)),
        (lambda d: DC(d.a + 1, d.b * 2), dict(in_dims=(DC(0, 0),), out_dims=DC(1, 0)),
         lambda L, x: (DC(x, x),)),
        (lambda d, n: {"s": d.a * n[0], "t": (n[1],)}, dict(in_dims=(0, (None, 0))),
         lambda L, x: (DC(x, x), (L.ones(2), x))),
        (lambda m: (m.values * 2, m.indices), dict(),
         lambda L, x: (L.max(x.reshape(3, 2, 1), 1),)),
    ]
    for fn, kw, make in cases:
        _close(ember.func.vmap(fn, **kw)(*make(ember, E)),
               torch.func.vmap(fn, **kw)(*make(torch, T)))
    # a structseq comes back as its own type
    r = ember.func.vmap(lambda x: ember.max(x, 0))(E)
    assert type(r) is ember.return_types.max


@pytest.mark.parametrize("fn,in_dims,out_dims,make", [
    (lambda d: d.a, (DC(0, None),), 0, lambda L, x: (DC(x, 5.0),)),
    (lambda d: d.a, (DC(0, 0),), 0, lambda L, x: (DC(x, 5.0),)),
    (lambda d: d.a, (Point(0, 0),), 0, lambda L, x: (DC(x, x),)),
    (lambda d: d, ([0, 0],), 0, lambda L, x: ([x, x, x],)),
    (lambda d: d, [0], 0, lambda L, x: (x,)),
    (lambda d: d, (0, 0), 0, lambda L, x: (x,)),
    (lambda d: d, ({"a": 0},), 0, lambda L, x: ({"b": x},)),
    (lambda d: d, (0.5,), 0, lambda L, x: (x,)),
    (lambda d: d, None, 0, lambda L, x: (x,)),
    (lambda d: d.x, 0, 0, lambda L, x: (Point(x, 3),)),
    (lambda d: (d, d), 0, (0, 1, 0), lambda L, x: (x,)),
    (lambda d: (d, d), 0, [0, 1], lambda L, x: (x,)),
    (lambda d: [d], 0, (1,), lambda L, x: (x,)),
    (lambda d: d, 0, [1], lambda L, x: (x,)),
    (lambda d: {"a": d}, 0, {"b": 1}, lambda L, x: (x,)),
    (lambda d: d, 0, "a", lambda L, x: (x,)),
    (lambda d: (d, 3), 0, 0, lambda L, x: (x,)),
    (lambda *a: a[0], 0, 0, lambda L, x: ()),
    (lambda a, b: a, (None, None), 0, lambda L, x: (x, x)),
    (lambda a: a, True, 0, lambda L, x: (x,)), (lambda a: a, (True,), 0, lambda L, x: (x,)),
    (lambda a: a, True, 0, lambda L, x: (x[0],)), (lambda a: a, True, 0, lambda L, x: (5,)),
    (lambda a: a, (np.int64(0),), 0, lambda L, x: (x,)),
    (lambda a, b: a, 0, 0, lambda L, x: (x, x[:2])),
])
def test_vmap_structure_errors_match_torch(registered, fn, in_dims, out_dims, make):
    E, T = ember.tensor(X), torch.tensor(X)
    _same_error(lambda: ember.func.vmap(fn, in_dims, out_dims)(*make(ember, E)),
                lambda: torch.func.vmap(fn, in_dims, out_dims)(*make(torch, T)))


def test_vmap_out_dims_one_tuple_for_single_output():
    E, T = ember.tensor(X), torch.tensor(X)
    _close(ember.func.vmap(lambda d: d * 2, out_dims=True)(E),        # a bool is an int here
           torch.func.vmap(lambda d: d * 2, out_dims=True)(T))
    _close(ember.func.vmap(lambda d: d, out_dims=(1,))(E),
           torch.func.vmap(lambda d: d, out_dims=(1,))(T))
    _close(ember.func.vmap(lambda d: (d, 3), out_dims=(0, None))(E)[0],
           torch.func.vmap(lambda d: (d, 3), out_dims=(0, None))(T)[0])


def test_grad_jacrev_jvp_vjp_over_registered_nodes(registered):
    E, T = ember.tensor(X), torch.tensor(X)
    f = lambda p: (p.x * p.y).sum()                      # noqa: E731
    _close(ember.func.grad(f)(Point(E, E + 1)), torch.func.grad(f)(Point(T, T + 1)))
    g = lambda d: (d.a ** 2).sum() + d.b.sum()           # noqa: E731
    _close(ember.func.grad(g)(DC(E, E)), torch.func.grad(g)(DC(T, T)))
    h = lambda p: Point(p.x.sum(), p.y * 2)              # noqa: E731
    e1, t1 = ember.ones(2), torch.ones(2)
    _close(ember.func.jacrev(h)(Point(e1, e1[:1])), torch.func.jacrev(h)(Point(t1, t1[:1])))
    _close(ember.func.jvp(h, (Point(e1, e1),), (Point(e1, e1),)),
           torch.func.jvp(h, (Point(t1, t1),), (Point(t1, t1),)))
    eo, efn = ember.func.vjp(h, Point(e1, e1))
    to, tfn = torch.func.vjp(h, Point(t1, t1))
    _close(efn(Point(ember.tensor(2.0), e1)), tfn(Point(torch.tensor(2.0), t1)))
    _same_error(lambda: efn((ember.tensor(2.0), e1)), lambda: tfn((torch.tensor(2.0), t1)))


@pytest.mark.parametrize("primals,tangents", [
    (lambda x: (x, x), lambda x: (x,)), (lambda x: ([x],), lambda x: ((x,),)),
    (lambda x: ({"a": x},), lambda x: ({"b": x},)), (lambda x: (x,), lambda x: [x]),
    (lambda x: (x,), lambda x: x), (lambda x: [x], lambda x: [x]),
])
def test_jvp_structure_errors_match_torch(primals, tangents):
    e1, t1 = ember.ones(2), torch.ones(2)
    _same_error(lambda: ember.func.jvp(lambda *a: a[0], primals(e1), tangents(e1)),
                lambda: torch.func.jvp(lambda *a: a[0], primals(t1), tangents(t1)))


def test_vjp_cotangent_structure_errors_match_torch():
    _, efn = ember.func.vjp(lambda a: (a, a * 2), ember.ones(2))
    _, tfn = torch.func.vjp(lambda a: (a, a * 2), torch.ones(2))
    for ct in (lambda x: x, lambda x: [x, x]):
        _same_error(lambda: efn(ct(ember.ones(2))), lambda: tfn(ct(torch.ones(2))))


def test_vmap_over_dicts_and_namedtuples_unchanged():
    E, T = ember.tensor(X), torch.tensor(X)
    fn = lambda d, t: {"a": d["x"] * t.a, "b": NT(t.b, t.a)}        # noqa: E731
    dims = ({"x": 0}, NT(None, 0))
    _close(ember.func.vmap(fn, dims)({"x": E}, NT(ember.ones(2), E)),
           torch.func.vmap(fn, dims)({"x": T}, NT(torch.ones(2), T)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.func.vmap(fn, dims, out_dims={"a": 1, "b": NT(0, 1)})({"x": E}, NT(ember.ones(2), E))


def test_torch_script_using_pytree_runs_on_ember(tmp_path):
    """``torch.utils._pytree`` (attribute and import) and vmap over a registered dataclass in
    a script run as torch by ``python -m ember.run``."""
    import subprocess
    import sys
    script = tmp_path / "user.py"
    script.write_text(
        "import dataclasses\n"
        "import torch\n"
        "from torch.utils._pytree import tree_map, register_dataclass\n"
        "print(torch.utils._pytree.tree_leaves([1, (2,)]))\n"
        "@dataclasses.dataclass\n"
        "class Batch:\n"
        "    x: object\n"
        "    y: object\n"
        "register_dataclass(Batch)\n"
        "b = Batch(torch.ones(3, 2), torch.zeros(3))\n"
        "print(tree_map(lambda t: tuple(t.shape), b))\n"
        "out = torch.func.vmap(lambda bb: Batch(bb.x.sum(), bb.y + 1))(b)\n"
        "print(type(out).__name__, out.x.tolist(), out.y.tolist())\n")
    expected = ("[1, 2]\nBatch(x=(3, 2), y=(3,))\nBatch [2.0, 2.0, 2.0] [1.0, 1.0, 1.0]\n")
    run = subprocess.run([sys.executable, "-m", "ember.run", str(script)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected          # what the script prints under torch 2.13


def test_functional_call_dict_tuples_match_torch():
    em, tm = ember.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    ep_ = {k: v.detach() * 0 + 1 for k, v in em.named_parameters()}
    tp_ = {k: v.detach() * 0 + 1 for k, v in tm.named_parameters()}
    split = lambda p: ({"weight": p["weight"]}, {"bias": p["bias"]})   # noqa: E731
    np.testing.assert_allclose(
        ember.func.functional_call(em, split(ep_), (ember.ones(1, 2),)).detach().numpy(),
        torch.func.functional_call(tm, split(tp_), (torch.ones(1, 2),)).detach().numpy())
    for dup in (lambda p: (p, p), lambda p: ({"bias": p["bias"], "weight": p["weight"]}, {}, p)):
        _same_error(lambda: ember.func.functional_call(em, dup(ep_), ember.ones(1, 2)),
                    lambda: torch.func.functional_call(tm, dup(tp_), torch.ones(1, 2)))


def _outcome(fn, lib):
    try:
        return repr(fn(lib))
    except Exception as e:              # noqa: BLE001 - the class and text are compared
        return f"{type(e).__name__}: {_no_addr(str(e))}"


class _Unreg:
    pass


@pytest.mark.parametrize("fn", [
    lambda p: p.register_pytree_node(_Unreg, lambda a: ([], None), lambda v, c: _Unreg(),
                                      to_dumpable_context=lambda c: c),
    lambda p: __import__("pickle").loads(__import__("pickle").dumps(
        p.tree_structure([1, {"a": (2, None)}]))) == p.tree_structure([1, {"a": (2, None)}]),
    lambda p: __import__("copy").deepcopy(p.tree_structure([1, {"a": 2}])),
    lambda p: __import__("pickle").loads(__import__("pickle").dumps(p.tree_structure(1))),
    lambda p: p.TreeSpec(list, None, [1]),
    lambda p: (p.TreeSpec(list, None, []).unflatten([]), p.TreeSpec(list, None, []).is_leaf()),
    lambda p: p.tree_map(lambda x, y: x + y, [1, (2,)], [[5], (6,)],
                         is_leaf=lambda x: isinstance(x, tuple)),
    lambda p: p.tree_map(lambda x: x, [1, 2], None),
    lambda p: p.treespec_pprint(p.tree_structure([])),
    lambda p: p.treespec_pprint([1]),
    lambda p: p.tree_leaves(p.tree_structure([1])),
    lambda p: p.key_get([1], (p.SequenceKey(3),)),
    lambda p: hash(p.MappingKey([1])),
    lambda p: (p.tree_all(bool, []), p.tree_any(bool, [])),
    lambda p: p.tree_map_only(str, str.upper, {"a": ("x", 1)}),
])
def test_misc_behaviour_matches_torch(fn):
    assert _outcome(fn, ep) == _outcome(fn, tp)


@pytest.mark.parametrize("aux", [lambda x: 1, lambda x: None, lambda x: [x, 2],
                                 lambda x: {"a": x, "b": (x * 2,)}, lambda x: Point(x, x)])
@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp", "jacrev", "jacfwd"])
def test_aux_must_hold_tensors_as_in_torch(registered, transform, aux):
    def call(lib):
        x = lib.ones(2)
        fn = getattr(lib.func, transform)
        f = lambda x: ((x * x).sum() if transform == "grad" else x * x, aux(x))   # noqa: E731
        if transform == "vjp":
            return fn(f, x, has_aux=True)[2]
        if transform == "jvp":
            return fn(f, (x,), (x,), has_aux=True)[2]
        return fn(f, has_aux=True)(x)[1]
    e, t = _outcome(call, ember), _outcome(call, torch)
    assert e.replace("ember", "torch") == t


def test_c_structseqs_are_leaves_return_types_are_nodes():
    import sys
    import time
    st = time.gmtime(0)
    for p in (ep, tp):
        assert p.is_structseq(st) and not p.is_namedtuple(st)
        assert p.tree_leaves(st) == [st] and p.tree_leaves(sys.flags) == [sys.flags]
    for op in (lambda L: L.linalg.slogdet(L.eye(2)), lambda L: L.sort(L.ones(3)),
               lambda L: L.ones(3).max(0), lambda L: L.ones(2, 2).topk(1)):
        assert repr(ep.tree_structure(op(ember))) == repr(tp.tree_structure(op(torch)))


def test_public_names():
    assert ep.__all__ == tp.__all__
    extra = ["SequenceKey", "MappingKey", "GetAttrKey", "register_dataclass", "register_constant",
             "map_only", "arg_tree_leaves", "treespec_leaf", "treespec_tuple", "treespec_dict",
             "_broadcast_to_and_flatten", "_register_pytree_node", "_register_namedtuple",
             "_deregister_pytree_node", "SUPPORTED_NODES", "is_constant_class", "ConstantNode"]
    assert [n for n in tp.__all__ + extra if not hasattr(ep, n)] == []
    assert ep.PyTreeSpec is ep.TreeSpec
    assert ember.Size in ep.SUPPORTED_NODES and namedtuple in ep.SUPPORTED_NODES


def _random_tree(rng, depth=0):
    """A random nest of the built-in node types with int/None/str leaves."""
    kind = rng.integers(0, 9 if depth < 3 else 1)
    n = int(rng.integers(0, 4))
    kids = lambda: [_random_tree(rng, depth + 1) for _ in range(n)]     # noqa: E731
    keys = lambda: [str(k) for k in rng.permutation(list("abcde"))[:n]]  # noqa: E731
    if kind == 0:
        return rng.choice([int(rng.integers(0, 9)), None, "s"])
    if kind == 1:
        return kids()
    if kind == 2:
        return tuple(kids())
    if kind == 3:
        return dict(zip(keys(), kids()))
    if kind == 4:
        return OrderedDict(zip(keys(), kids()))
    if kind == 5:
        return defaultdict(list, zip(keys(), kids()))
    if kind == 6:
        return deque(kids(), maxlen=int(rng.integers(3, 6)))
    if kind == 7:
        return NT(_random_tree(rng, depth + 1), _random_tree(rng, depth + 1))
    return [_random_tree(rng, depth + 1), (_random_tree(rng, depth + 1),)]


def _prefix(tree, rng):
    """``tree`` with random subtrees cut to one int leaf (an in_dims-like prefix); some
    dicts in reversed key order."""
    if rng.random() < 0.3 or ep.tree_is_leaf(tree):
        return int(rng.integers(0, 3))
    node = ep._node_def(type(tree))
    children, context = node.flatten_fn(tree)
    out = node.unflatten_fn([_prefix(c, rng) for c in children], context)
    if type(out) is dict and rng.random() < 0.3:
        out = dict(reversed(list(out.items())))
    return out


def test_random_structures_match_torch():
    rng = np.random.default_rng(0)
    for _ in range(60):
        tree = _random_tree(rng)
        el, es = ep.tree_flatten(tree)
        tl, ts = tp.tree_flatten(tree)
        assert el == tl and repr(es) == repr(ts), tree
        assert ep.treespec_pprint(es) == tp.treespec_pprint(ts)
        assert [ep.keystr(k) for k, _ in ep.tree_leaves_with_path(tree)] == \
            [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(tree)]
        assert es.flatten_up_to(tree) == el and ep.tree_unflatten(el, es) == tree
        if "namedtuple" not in repr(es):
            assert ep.treespec_dumps(es) == tp.treespec_dumps(ts)
        prefix = _prefix(tree, rng)
        assert ep._broadcast_to_and_flatten(prefix, es) == \
            tp._broadcast_to_and_flatten(prefix, ts), (prefix, tree)


Q = namedtuple("Q", "a b")


def test_registered_namedtuple_still_flattens_as_namedtuple():
    try:
        for p in (ep, tp):
            p.register_pytree_node(Q, lambda q: ([q.a], q.b), lambda v, c: Q(v[0], c))
        for fn in (lambda p: p.tree_structure(Q(1, 2)), lambda p: p.tree_map(str, Q(1, 2)),
                   lambda p: p._broadcast_to_and_flatten(Q(0, 5), p.tree_structure(Q([1, 2], 3))),
                   lambda p: p.tree_structure(Q(1, 2)).flatten_up_to(Q([9], 2))):
            assert _outcome(fn, ep) == _outcome(fn, tp)
    finally:
        ep._deregister_pytree_node(Q)
        tp._deregister_pytree_node(Q)
    assert ep.tree_leaves(Q(1, [2])) == [1, 2]
