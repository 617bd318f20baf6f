"""TorchScript's static types: what each IR Value holds, subtyping, unification of branch
results, and the reading of Python annotations (``Optional[Tensor]``, ``List[int]``...).

Types print as torch prints them in graphs (``Tensor?``, ``int[]``, ``Dict(str, Tensor)``,
``(int, Tensor)``) and, through ``annotation``, as TorchScript source writes them.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass


class JitType:
    """Base of all types. ``str(t)`` is the graph form, ``t.annotation`` the source form."""

    @property
    def annotation(self):
        return str(self)

    def is_subtype_of(self, other):
        return is_subtype(self, other)


@dataclass(frozen=True)
class _Simple(JitType):
    name: str
    source: str = ""

    def __str__(self):
        return self.name

    @property
    def annotation(self):
        return self.source or self.name


TensorType = _Simple("Tensor")
IntType = _Simple("int")
FloatType = _Simple("float")
BoolType = _Simple("bool")
ComplexType = _Simple("complex")
StrType = _Simple("str")
NoneType = _Simple("NoneType", "None")
NumberType = _Simple("Scalar", "number")      # int | float | complex
DeviceType = _Simple("Device", "Device")
DtypeType = _Simple("int", "int")              # torch stores a dtype as its ScalarType int
LayoutType = _Simple("Layout", "int")
AnyType = _Simple("Any")
GeneratorType = _Simple("Generator")
PendingType = _Simple("$pending")   # a value returned inside a loop, typed once compiled


@dataclass(frozen=True)
class OptionalType(JitType):
    elem: JitType

    def __str__(self):
        return f"{self.elem}?"

    @property
    def annotation(self):
        return f"Optional[{self.elem.annotation}]"


@dataclass(frozen=True)
class ListType(JitType):
    elem: JitType

    def __str__(self):
        return f"{self.elem}[]"

    @property
    def annotation(self):
        return f"List[{self.elem.annotation}]"


@dataclass(frozen=True)
class DictType(JitType):
    key: JitType
    value: JitType

    def __str__(self):
        return f"Dict({self.key}, {self.value})"

    @property
    def annotation(self):
        return f"Dict[{self.key.annotation}, {self.value.annotation}]"


@dataclass(frozen=True)
class TupleType(JitType):
    elems: tuple
    names: tuple | None = None        # a NamedTuple's field names
    qualname: str | None = None       # a NamedTuple's class name
    py_class: object = None

    def __str__(self):
        if self.qualname:
            return f"NamedTuple({self.qualname.split('.')[-1]})"
        return "(" + ", ".join(map(str, self.elems)) + ")"

    @property
    def annotation(self):
        if self.qualname:
            return self.qualname
        if not self.elems:
            return "Tuple[()]"
        return "Tuple[" + ", ".join(e.annotation for e in self.elems) + "]"


@dataclass(frozen=True)
class UnionType(JitType):
    """``Union[int, str]``: a value of one of ``elems``; ``isinstance`` narrows it."""
    elems: tuple

    def __str__(self):
        return "Union(" + ", ".join(map(str, self.elems)) + ")"

    @property
    def annotation(self):
        return "Union[" + ", ".join(e.annotation for e in self.elems) + "]"

    def without(self, t):
        """The union less the members that are ``t`` (one member left: that type)."""
        rest = tuple(e for e in self.elems if not is_subtype(e, t))
        return make_union(rest)


def make_union(elems):
    """Union of ``elems`` (flattened, duplicates dropped; one: itself; with None: Optional
    where that is all)."""
    flat = []
    for e in elems:
        for x in (e.elems if isinstance(e, UnionType) else
                  (e.elem, NoneType) if isinstance(e, OptionalType) else (e,)):
            if x not in flat:
                flat.append(x)
    if not flat:
        return NoneType
    if len(flat) == 1:
        return flat[0]
    if len(flat) == 2 and NoneType in flat:
        return OptionalType(flat[0] if flat[1] is NoneType else flat[1])
    return UnionType(tuple(sorted(flat, key=lambda t: t.annotation)))     # torch's order


@dataclass(frozen=True)
class FutureType(JitType):
    elem: JitType

    def __str__(self):
        return f"Future({self.elem})"

    @property
    def annotation(self):
        return f"Future[{self.elem.annotation}]"


@dataclass(frozen=True)
class RRefType(JitType):
    """``RRef[T]``: what scripted ``rpc.remote`` returns (see ``_rpc.py``)."""
    elem: JitType

    def __str__(self):
        return f"RRef({self.elem})"

    @property
    def annotation(self):
        return f"RRef[{self.elem.annotation}]"


@dataclass(frozen=True, eq=False)
class ClassType(JitType):
    """A scripted class or module. ``attributes`` maps name -> type (filled while the class
    is compiled); ``methods`` name -> compiled Function; ``constants`` name -> value."""
    qualname: str
    py_class: object = None
    is_module: bool = False
    attributes: dict = None
    methods: dict = None
    constants: dict = None

    def __str__(self):
        return self.qualname

    @property
    def annotation(self):
        return self.qualname


@dataclass(frozen=True, eq=False)
class EnumType(JitType):
    """A Python ``enum.Enum`` subclass whose members all hold values of one type
    (``int``, ``float`` or ``str``): ``Enum<__torch__.Color>`` in graphs. Run-time values
    are the members themselves."""
    qualname: str
    py_class: object = None
    value_type: JitType = IntType

    def __str__(self):
        return f"Enum<{self.qualname}>"

    @property
    def annotation(self):
        return self.qualname

    def members(self):
        """[(name, value)] in definition order (aliases left out, as ``iter(cls)`` does)."""
        return [(m.name, m.value) for m in self.py_class]


_ENUMS: dict = {}


def is_enum_class(obj):
    import enum
    return isinstance(obj, type) and issubclass(obj, enum.Enum) and obj is not enum.Enum


def enum_type(cls, qualname=None):
    """The EnumType of an ``enum.Enum`` subclass (one per class; ``qualname``: the archive
    name of a class rebuilt by ``jit.load``)."""
    t = _ENUMS.get(cls)
    if t is not None:
        return t
    from ember.jit._script import qualified_class_name
    kinds = {IntType: int, FloatType: float, StrType: str}
    vtypes = []
    for m in cls:
        v = m.value
        vt = BoolType if isinstance(v, bool) else next(
            (jt for jt, py in kinds.items() if isinstance(v, py)), None)
        if vt not in kinds:
            raise AnnotationError(f"Cannot create Enum with value type '{type(v).__name__}', "
                                  f"only int, float and str are supported")
        if vtypes and vt != vtypes[0]:
            raise AnnotationError(f"Could not unify type list since element {len(vtypes)} of "
                                  f"type {vt} did not match the types before it ({vtypes[0]})")
        vtypes.append(vt)
    t = _ENUMS[cls] = EnumType(qualname or qualified_class_name(cls), cls,
                               vtypes[0] if vtypes else IntType)
    return t


@dataclass(frozen=True, eq=False)
class FunctionType(JitType):
    """A scripted function used as a value (``prim::Constant`` of a callee)."""
    fn: object

    def __str__(self):
        return "Function"


def is_subtype(a, b):
    if a == b or b is AnyType or a is PendingType or b is PendingType:
        return True
    if isinstance(a, UnionType):
        return all(is_subtype(x, b) for x in a.elems)
    if isinstance(b, UnionType):
        if isinstance(a, OptionalType):
            return NoneType in b.elems and is_subtype(a.elem, b)
        return any(is_subtype(a, x) for x in b.elems)
    if isinstance(b, OptionalType):
        return a is NoneType or is_subtype(a.elem if isinstance(a, OptionalType) else a, b.elem)
    if b is NumberType:
        return a in (IntType, FloatType, ComplexType, NumberType)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(map(is_subtype, a.elems, b.elems)) \
            and (b.qualname is None or a.qualname == b.qualname)
    if isinstance(a, ListType) and isinstance(b, ListType):
        return a.elem == b.elem or b.elem is AnyType
    if isinstance(a, FutureType) and isinstance(b, FutureType):
        return is_subtype(a.elem, b.elem)
    return False


def unify(a, b):
    """The type of a value that is ``a`` on one path and ``b`` on another, or None."""
    if a is PendingType or b is PendingType:
        return b if a is PendingType else a
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    if a is NoneType:
        return OptionalType(b)
    if b is NoneType:
        return OptionalType(a)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        ea = a.elem if isinstance(a, OptionalType) else a
        eb = b.elem if isinstance(b, OptionalType) else b
        u = unify(ea, eb)
        return OptionalType(u) if u is not None else None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = tuple(unify(x, y) for x, y in zip(a.elems, b.elems))
        return None if None in elems else TupleType(elems)
    return None


def unwrap_optional(t):
    return t.elem if isinstance(t, OptionalType) else t


# ------------------------------------------------------------------ Python annotations

class AnnotationError(TypeError):
    pass


def from_annotation(ann, resolve_class=None, globals_=None):
    """The JitType of a Python annotation (a typing object, a class, or a string)."""
    import ember
    if isinstance(ann, str):
        import ast
        return from_annotation_ast(ast.parse(ann, mode="eval").body, globals_ or {},
                                   resolve_class)
    if ann is None or ann is type(None):
        return NoneType
    if ann is ember.Tensor or isinstance(ann, type) and issubclass(ann, ember.Tensor):
        return TensorType
    simple = {int: IntType, float: FloatType, bool: BoolType, str: StrType, complex: ComplexType,
              typing.Any: AnyType, ember.device: DeviceType, ember.dtype: DtypeType}
    try:
        if ann in simple:
            return simple[ann]
    except TypeError:
        pass
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, typing.List):
        return ListType(from_annotation(args[0], resolve_class, globals_) if args else TensorType)
    if origin in (tuple, typing.Tuple):
        if args == ((),):
            return TupleType(())
        return TupleType(tuple(from_annotation(a, resolve_class, globals_) for a in args))
    if origin in (dict, typing.Dict):
        return DictType(*(from_annotation(a, resolve_class, globals_) for a in args))
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return make_union([from_annotation(a, resolve_class, globals_) for a in args])
    if getattr(ann, "__origin__", None) is not None and str(ann).startswith("typing.Final"):
        return from_annotation(args[0], resolve_class, globals_)
    from ember.jit import _futures
    if origin is _futures.Future:
        return FutureType(from_annotation(args[0], resolve_class, globals_))
    if isinstance(ann, type) and issubclass(ann, tuple) and hasattr(ann, "_fields"):
        return namedtuple_type(ann, resolve_class)
    if is_enum_class(ann):
        return enum_type(ann)
    if isinstance(ann, type) and resolve_class is not None:
        t = resolve_class(ann)
        if t is not None:
            return t
    raise AnnotationError(f"Unknown type annotation: '{getattr(ann, '__name__', ann)}'")


def namedtuple_type(cls, resolve_class=None):
    hints = typing.get_type_hints(cls) if getattr(cls, "__annotations__", None) else {}
    fields = cls._fields
    elems = tuple(from_annotation(hints[f], resolve_class) if f in hints else TensorType
                  for f in fields)
    return TupleType(elems, tuple(fields), f"__torch__.{cls.__qualname__}", cls)


_AST_SIMPLE = {"Tensor": TensorType, "int": IntType, "float": FloatType, "bool": BoolType,
               "str": StrType, "complex": ComplexType, "None": NoneType, "Any": AnyType,
               "number": NumberType, "Device": DeviceType, "device": DeviceType}


def from_annotation_ast(node, env, resolve_class=None):
    """Read an annotation from its ``ast`` expression, looking names up in ``env``."""
    import ast
    if isinstance(node, ast.Constant):
        if node.value is None:
            return NoneType
        if isinstance(node.value, str):
            return from_annotation_ast(ast.parse(node.value, mode="eval").body, env,
                                       resolve_class)
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = ast.unparse(node)
        tail = dotted.split(".")[-1]
        obj = _lookup(dotted, env)
        if obj is not _MISSING and not isinstance(obj, str):
            return from_annotation(obj, resolve_class, env)
        if tail in _AST_SIMPLE and dotted.split(".")[0] in ("torch", "ember", tail, "typing"):
            return _AST_SIMPLE[tail]
        if resolve_class is not None:
            t = resolve_class(dotted)
            if t is not None:
                return t
        raise AnnotationError(f"Unknown type annotation: '{dotted}'")
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value).split(".")[-1]
        sl = node.slice
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        sub = [from_annotation_ast(i, env, resolve_class) for i in items] \
            if not (head in ("Tuple", "tuple") and len(items) == 1
                    and isinstance(items[0], ast.Tuple) and not items[0].elts) else []
        if head in ("List", "list"):
            return ListType(sub[0])
        if head in ("Tuple", "tuple"):
            return TupleType(tuple(sub))
        if head in ("Dict", "dict"):
            return DictType(sub[0], sub[1])
        if head == "Optional":
            return OptionalType(sub[0])
        if head == "Final":
            return sub[0]
        if head == "Future":
            return FutureType(sub[0])
        if head == "RRef":
            return RRefType(sub[0])
        if head == "Union":
            return make_union(sub)
        raise AnnotationError(f"Unknown type constructor {head}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        a = from_annotation_ast(node.left, env, resolve_class)
        b = from_annotation_ast(node.right, env, resolve_class)
        u = unify(a, b)
        if u is not None:
            return u
    raise AnnotationError(f"Unknown type annotation: '{ast.unparse(node)}'")


_MISSING = object()


def _lookup(dotted, env):
    parts = dotted.split(".")
    obj = env.get(parts[0], _MISSING) if isinstance(env, dict) else _MISSING
    if obj is _MISSING:
        import builtins
        obj = getattr(builtins, parts[0], _MISSING)
        if obj is _MISSING:
            return _MISSING
    for p in parts[1:]:
        obj = getattr(obj, p, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def type_of_value(v, resolve_class=None):
    """Infer the type of a Python value (module attributes, default arguments, constants)."""
    import ember
    if isinstance(v, ember.Tensor):
        return TensorType
    if v is None:
        return NoneType
    if is_enum_class(type(v)):
        return enum_type(type(v))
    if isinstance(v, bool):
        return BoolType
    if isinstance(v, int):
        return IntType
    if isinstance(v, float):
        return FloatType
    if isinstance(v, complex):
        return ComplexType
    if isinstance(v, str):
        return StrType
    if isinstance(v, ember.device):
        return DeviceType
    if isinstance(v, ember.dtype):
        return DtypeType
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        return namedtuple_type(type(v), resolve_class)
    if isinstance(v, tuple):
        return TupleType(tuple(type_of_value(e, resolve_class) for e in v))
    if isinstance(v, list):
        if not v:
            return ListType(TensorType)
        ts = [type_of_value(e, resolve_class) for e in v]
        t = ts[0]
        for u in ts[1:]:
            t = unify(t, u)
            if t is None:
                raise AnnotationError("List elements have different types")
        return ListType(t)
    if isinstance(v, dict):
        if not v:
            return DictType(StrType, TensorType)
        k = type_of_value(next(iter(v)), resolve_class)
        val = None
        for e in v.values():
            te = type_of_value(e, resolve_class)
            val = te if val is None else unify(val, te)
        return DictType(k, val)
    if resolve_class is not None:
        t = resolve_class(type(v))
        if t is not None:
            return t
    from ember.jit._namespaced import torchbind_type
    t = torchbind_type(v)           # packed parameters (torch.classes.quantized.*)
    if t is not None:
        return t
    raise AnnotationError(f"cannot infer the TorchScript type of a {type(v).__name__}")
