"""The frontend's expressions: ``e_*`` methods of the Compiler (names, attributes,
containers, comprehensions, f-strings, operators, comparisons, subscripts and Tensor
index templates, calls), conditions and their type refinements, and the coercions of a
value to an expected type. A mixin of ``_compiler.Compiler``, which holds the statements,
the environment and the node emission they use."""
from __future__ import annotations

import ast
import operator

from ember.jit import _builtins as B
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._env import MISSING as _MISSING, POISONED as _POISONED, Env
from ember.jit._ir import NOT_CONSTANT as _NOT
from ember.jit.frontend import CompileError, NotSupportedError

# `a is b` on these compares values (TorchScript ints, dtypes, bools are values)
_VALUE_TYPES = (T.IntType, T.BoolType)


class Expressions:
    """Expression compilation (mixed into ``Compiler``)."""

    def expr(self, e, type_hint=None):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            self.unsupported(e)
        if type_hint is not None and type(e).__name__ in ("List", "Dict", "ListComp", "DictComp",
                                                           "Constant", "Call"):
            return m(e, type_hint=type_hint)
        return m(e)

    def value(self, sugar, node):
        """The SSA Value of a sugared thing (a constant becomes ``prim::Constant``)."""
        if isinstance(sugar, S.SimpleValue):
            return sugar.value
        if isinstance(sugar, S.PythonConstant):
            return self.const_value(sugar.value, node)
        if isinstance(sugar, S.ModuleValue):
            return sugar.value
        if isinstance(sugar, S.TupleSugar):
            vals = [self.value(i, node) for i in sugar.items]
            return self.emit("prim::TupleConstruct", vals,
                             [T.TupleType(tuple(v.type for v in vals))], node).output
        if isinstance(sugar, S.ScriptFunctionRef):
            n = self.emit("prim::Constant", [], [T.FunctionType(sugar.function)], node,
                          {"name": sugar.function.name})
            n.fn = sugar.function
            return n.output
        if isinstance(sugar, S.ModuleList):
            vals = [self.value(i, node) for i in sugar.items]
            return self.emit("prim::TupleConstruct", vals,
                             [T.TupleType(tuple(v.type for v in vals))], node).output
        desc = sugar.describe() if isinstance(sugar, S.Sugar) else repr(sugar)
        self.error(f"{desc} cannot be used as a value", node)

    def const_value(self, value, node):
        import ember
        if isinstance(value, (tuple, list)) and not isinstance(value, ember.Size) and \
                not hasattr(type(value), "_fields") and any(
                    not isinstance(x, (int, float, bool, str, type(None))) for x in value):
            vals = [self.const_value(x, node) for x in value]
            kind = "prim::TupleConstruct" if isinstance(value, tuple) else "prim::ListConstruct"
            t = T.TupleType(tuple(v.type for v in vals)) if isinstance(value, tuple) \
                else T.ListType(vals[0].type if vals else T.TensorType)
            return self.emit(kind, vals, [t], node).output
        if isinstance(value, ember.Size):
            value = list(value)
        try:
            return self.const(value, node)
        except T.AnnotationError:
            self.error(f"Python value of type '{type(value).__name__}' cannot be used as a "
                       f"value", node)

    def e_Constant(self, e, type_hint=None):
        if e.value is Ellipsis:
            return S.PythonConstant(Ellipsis)
        return S.SimpleValue(self.const(e.value, e))

    def e_Name(self, e):
        v = self.env.lookup(e.id)
        if v is not None and v is not _POISONED:
            return v
        if e.id in self._one_sided and (v is None or v is _POISONED):
            node, msg = self._one_sided[e.id]
            raise CompileError(("\n" if "defined" in msg else "") + msg, self.span(node),
                               self.span(e))
        from ember.jit._script import RecursiveCall
        try:
            r = self.resolver(e.id)
        except RecursiveCall as err:
            self.error(err.msg, e)
        if r is None:
            self.error(f"undefined value {e.id}", e)
        return r

    def e_NamedExpr(self, e):
        v = self.expr(e.value)
        self.assign(e.target, v, e)
        return v

    def e_Attribute(self, e):
        base = self.expr(e.value)
        return self.attribute(base, e.attr, e)

    def attribute(self, base, attr, e):
        if isinstance(base, S.PyModule):
            return self.resolve_module_attr(base.module, attr, e)
        if isinstance(base, S.ModuleValue):
            return self.module_attr(base, attr, e)
        if isinstance(base, S.PythonConstant) and not isinstance(
                base.value, (str, int, float, bool, list, tuple)):
            try:
                return self.resolver.wrap(getattr(base.value, attr), attr)
            except AttributeError:
                self.error(f"object has no attribute {attr}", e)
        if isinstance(base, S.ClassRef):
            try:
                return self.resolver.wrap(getattr(base.cls, attr), attr)
            except AttributeError:
                self.error(f"class has no attribute {attr}", e)
        v = self.value(base, e)
        t = v.type
        if t is T.TensorType:
            if attr in B.TENSOR_ATTRIBUTES:
                return S.SimpleValue(self.emit("prim::TensorAttr" if attr not in ("dtype", "device", "shape") else f"prim::{attr}", [v], [B.TENSOR_ATTRIBUTES[attr]], e,
                                               {"name": attr} if attr not in ("dtype", "device", "shape") else None).output)
            return S.Method(v, attr)
        if isinstance(t, T.ClassType):
            if t.attributes and attr in t.attributes:
                return S.SimpleValue(self.emit("prim::GetAttr", [v], [t.attributes[attr]], e,
                                               {"name": attr}).output)
            return S.Method(v, attr)
        if isinstance(t, T.TupleType) and t.names and attr in t.names:
            k = t.names.index(attr)
            return S.SimpleValue(self.emit("prim::TupleIndex", [v, self.const(k)], [t.elems[k]],
                                           e).output)
        if isinstance(t, T.EnumType) and attr in ("value", "name"):
            kind, rt = (("prim::EnumValue", t.value_type) if attr == "value"
                        else ("prim::EnumName", T.StrType))
            return S.SimpleValue(self.emit(kind, [v], [rt], e, fn=_ENUM_GETTERS[attr]).output)
        if t is T.ComplexType and attr in ("real", "imag"):
            return S.SimpleValue(self.emit("prim::NumAttr", [v], [T.FloatType], e,
                                           {"name": attr}).output)
        if t is T.DeviceType and attr in ("type", "index"):
            return S.SimpleValue(self.emit("prim::NumAttr", [v], [T.StrType if attr == "type" else
                                                                  T.OptionalType(T.IntType)], e,
                                           {"name": attr}).output)
        return S.Method(v, attr)

    def resolve_module_attr(self, module, attr, e):
        obj = getattr(module, attr, _MISSING)
        if obj is _MISSING:
            self.error(f"Unknown builtin op: {module.__name__}.{attr}", e)
        return self.resolver.wrap(obj, attr)

    def module_attr(self, mod, attr, e):
        """``self.<attr>`` on a scripted module."""
        ct = mod.class_type
        if ct.constants and attr in ct.constants:
            return S.PythonConstant(ct.constants[attr])
        sub = self.resolver.submodule(mod, attr)
        if sub is not None:
            if isinstance(sub, S.ModuleList):
                return sub
            v = self.emit("prim::GetAttr", [mod.value], [sub.class_type], e, {"name": attr},
                          names=[attr]).output
            return S.ModuleValue(v, sub.module, sub.class_type)
        if ct.attributes and attr in ct.attributes:
            return S.SimpleValue(self.emit("prim::GetAttr", [mod.value], [ct.attributes[attr]],
                                           e, {"name": attr}, names=[attr]).output)
        fns = (ct.constants or {}).get("$functions") or {}
        if attr in fns:                     # a function stored on the module
            return self.resolver.wrap(fns[attr], attr)
        meth = self.resolver.module_method(mod, attr)
        if isinstance(meth, S.PropertyGet):
            return S.SimpleValue(self.resolver.call_module(self, mod, f"__{attr}_getter", [], {},
                                                           e))
        if meth is not None:
            return meth
        name = getattr(mod.module, "original_name", type(mod.module).__name__)
        failed = (ct.constants or {}).get("$failed", {}).get(attr)
        hint = "" if failed is None else (
            f"(This attribute exists on the Python module, but we failed to convert Python "
            f"type: '{failed}' to a TorchScript type. Only tensors and (possibly nested) "
            f"tuples of tensors, lists, or dicts are supported as inputs or outputs of traced "
            f"functions, but instead got value of type {failed}.. Its type was inferred; try "
            f"adding a type annotation for the attribute.)")
        self.error(f"Module '{name}' has no attribute '{attr}' {hint}", e)

    def e_Tuple(self, e):
        items = [self.expr(x) for x in e.elts]
        if any(isinstance(i, (S.ModuleValue, S.ModuleList, S.PyModule, S.Builtin)) for i in items):
            return S.TupleSugar(items)
        vals = [self.value(i, x) for i, x in zip(items, e.elts)]
        return S.SimpleValue(self.emit("prim::TupleConstruct", vals,
                                       [T.TupleType(tuple(v.type for v in vals))], e).output)

    def e_List(self, e, type_hint=None):
        vals = [self.value(self.expr(x), x) for x in e.elts]
        if type_hint is not None and isinstance(T.unwrap_optional(type_hint), T.ListType):
            t = T.unwrap_optional(type_hint)
        elif not vals:
            t = T.ListType(T.TensorType)
        else:
            et = vals[0].type
            for v in vals[1:]:
                u = T.unify(et, v.type)
                if u is None:
                    if B.is_number(et) and B.is_number(v.type):
                        u = T.NumberType
                    else:
                        self.error(f"Lists must contain only a single type, first element had "
                                   f"type {et.annotation} and element {vals.index(v)} had type "
                                   f"{v.type.annotation}", e)
                et = u
            t = T.ListType(et)
        return S.SimpleValue(self.emit("prim::ListConstruct", vals, [t], e).output)

    def e_Dict(self, e, type_hint=None):
        if any(k is None for k in e.keys):
            raise NotSupportedError("Dict expansion (e.g. `{**dict}`) is not supported",
                                    self.span(e, 1))
        keys = [self.value(self.expr(k), k) for k in e.keys]
        vals = [self.value(self.expr(v), v) for v in e.values]
        if type_hint is not None and isinstance(T.unwrap_optional(type_hint), T.DictType):
            t = T.unwrap_optional(type_hint)
        elif not keys:
            t = T.DictType(T.StrType, T.TensorType)
        else:
            vt = vals[0].type
            for v in vals[1:]:
                vt = T.unify(vt, v.type) or self.error("Dict values must contain only a single "
                                                       "type", e)
            t = T.DictType(keys[0].type, vt)
        inputs = [x for kv in zip(keys, vals) for x in kv]
        return S.SimpleValue(self.emit("prim::DictConstruct", inputs, [t], e).output)

    def e_ListComp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=False)

    def e_GeneratorExp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=False)      # torch: a list

    def e_DictComp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=True)

    def comprehension(self, e, type_hint, is_dict):
        if len(e.generators) != 1 or e.generators[0].is_async:
            self.unsupported(e, "Comprehensions with several for clauses aren't supported")
        gen = e.generators[0]
        hint = T.unwrap_optional(type_hint) if type_hint is not None else None
        t = hint or (T.DictType(T.StrType, T.TensorType) if is_dict else T.ListType(T.TensorType))
        kind = "prim::DictConstruct" if is_dict else "prim::ListConstruct"
        it = self.expr(gen.iter)
        if not gen.ifs and not isinstance(it, S.SimpleValue):
            items = self.unrolled_items(it, gen.iter)     # module containers, constant tuples
            if items is not None:
                return self.unrolled_comprehension(e, gen, items, is_dict, hint)
        result = self.emit(kind, [], [t], e).output
        trip, bind = self.iteration(it, gen.iter)
        outer_env = self.env
        loop = self.emit("prim::Loop", [trip, self.const(True)], (), e)
        b = loop.add_block()
        outer_block = self.block
        self.block, self.env = b, Env(b, outer_env)
        saved_index = self.loop_index
        self.loop_index = b.add_param(T.IntType, None)   # named by a target it binds
        self.assign(gen.target, bind(), e)
        seen = {}

        def body():
            if is_dict:
                k = self.value(self.expr(e.key), e.key)
                v = self.value(self.expr(e.value), e.value)
                seen["t"] = T.DictType(k.type, v.type)
                self.emit("aten::_set_item", [result, k, v], (), e, fn=operator.setitem)
            else:
                v = self.value(self.expr(e.elt), e.elt)
                seen["t"] = T.ListType(v.type)
                self.emit("aten::append", [result, v], (), e, fn=list.append)
            return None

        if gen.ifs:
            cond = None
            for c in gen.ifs:
                cv = self.to_bool(self.value(self.expr(c), c), c)
                cond = cv if cond is None else self.emit("aten::__and__", [cond, cv], [T.BoolType],
                                                          fn=operator.and_).output
            self.emit_if(cond, None, None, e, then_fn=body, else_fn=lambda: None)
        else:
            body()
        b.set_returns([self.const(True)])
        self.block, self.env = outer_block, outer_env
        self.loop_index = saved_index
        if hint is None and "t" in seen:
            result.set_type(seen["t"])
        return S.SimpleValue(result)

    def unrolled_comprehension(self, e, gen, items, is_dict, hint):
        """A comprehension over a compile-time sequence: one element per item."""
        outer_env = self.env
        self.env = Env(self.block, outer_env)
        keys, vals = [], []
        try:
            for item in items:
                self.assign(gen.target, item, e)
                if is_dict:
                    keys.append(self.value(self.expr(e.key), e.key))
                vals.append(self.value(self.expr(e.value if is_dict else e.elt),
                                       e.value if is_dict else e.elt))
        finally:
            self.env = outer_env
        if hint is not None:
            t = hint
        elif is_dict:
            t = T.DictType(keys[0].type, vals[0].type) if keys else \
                T.DictType(T.StrType, T.TensorType)
        else:
            et = vals[0].type if vals else T.TensorType
            for v in vals[1:]:
                et = T.unify(et, v.type) or self.error(
                    "Lists must contain only a single type", e)
            t = T.ListType(et)
        if is_dict:
            return S.SimpleValue(self.emit("prim::DictConstruct",
                                           [x for kv in zip(keys, vals) for x in kv], [t],
                                           e).output)
        return S.SimpleValue(self.emit("prim::ListConstruct", vals, [t], e).output)

    def e_JoinedStr(self, e):
        fmt, args = [], []
        for part in e.values:
            if isinstance(part, ast.Constant):
                fmt.append(str(part.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(part, ast.FormattedValue):
                spec = ""
                if part.format_spec is not None:
                    spec = ":" + "".join(str(p.value) for p in part.format_spec.values
                                         if isinstance(p, ast.Constant))
                conv = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[part.conversion]
                fmt.append("{" + conv + spec + "}")
                args.append(self.value(self.expr(part.value), part.value))
        return S.SimpleValue(self.emit("aten::format", [self.const("".join(fmt))] + args,
                                       [T.StrType], e, fn=B.script_format).output)

    def e_IfExp(self, e):
        cond = self.value(self.expr(e.test), e.test)
        c = cond.constant()
        rt, rf = self.refinements(e.test)
        if type(c) is bool:
            return self.expr(e.body if c else e.orelse)
        cond = self.to_bool(cond, e.test)

        def branch(x, refine):
            def run():
                self.refine(refine)
                self.env.vars["$tmp"] = S.SimpleValue(self.value(self.expr(x), x))
            return run
        self.emit_if(cond, None, None, e, then_fn=branch(e.body, rt), else_fn=branch(e.orelse, rf))
        return self.env.vars.pop("$tmp")

    def e_BoolOp(self, e):
        # short-circuit: a and b -> if a: b else: False
        is_and = isinstance(e.op, ast.And)
        acc = self.to_bool(self.value(self.expr(e.values[0]), e.values[0]), e.values[0])
        for rhs in e.values[1:]:
            c = acc.constant()
            if type(c) is bool:
                if c == is_and:
                    acc = self.to_bool(self.value(self.expr(rhs), rhs), rhs)
                continue
            refine = self.refinements(e.values[0])[0 if is_and else 1]

            def evaluate(rhs=rhs, refine=refine):
                self.refine(refine)
                self.env.vars["$tmp"] = S.SimpleValue(self.to_bool(self.value(self.expr(rhs), rhs), rhs))

            def short(val=not is_and):
                self.env.vars["$tmp"] = S.SimpleValue(self.const(val))
            if is_and:
                self.emit_if(acc, None, None, e, then_fn=evaluate, else_fn=short)
            else:
                self.emit_if(acc, None, None, e, then_fn=short, else_fn=evaluate)
            acc = self.env.vars.pop("$tmp").value
        return S.SimpleValue(acc)

    def e_UnaryOp(self, e):
        v = self.value(self.expr(e.operand), e.operand)
        name, fn, sym = B.UNARY_OPERATORS[type(e.op).__name__]
        if isinstance(e.op, ast.Not):
            c = v.constant()
            if type(c) is bool:
                return S.SimpleValue(self.const(not c))
            v = self.to_bool(v, e.operand)
            return S.SimpleValue(self.emit("aten::__not__", [v], [T.BoolType], e, fn=fn,
                                           attrs={"_py": sym}).output)
        if v.type is T.TensorType:
            return S.SimpleValue(self.call_tensor_method(v, {"neg": "neg", "pos": "positive",
                                                             "__invert__": "bitwise_not"}[name],
                                                         [], {}, e))
        c = v.constant()
        if c is not _NOT and isinstance(c, (int, float)) and not isinstance(c, bool):
            return S.SimpleValue(self.const(fn(c)))
        t = v.type if v.type is not T.BoolType else T.IntType
        return S.SimpleValue(self.emit(f"aten::{name}", [v], [t], e, fn=fn,
                                       attrs={"_py": sym}).output)

    def e_BinOp(self, e):
        a = self.value(self.expr(e.left), e.left)
        b = self.value(self.expr(e.right), e.right)
        return S.SimpleValue(self.binary(type(e.op).__name__, a, b, e))

    def binary(self, opname, a, b, e):
        name, fn, sym = B.BINARY_OPERATORS[opname]
        ta, tb = a.type, b.type
        if ta is T.TensorType or tb is T.TensorType:
            if ta is not T.TensorType:      # 2 - x -> rsub / reflected dunder
                return self.emit(f"aten::{name}", [a, b], [T.TensorType], e, fn=fn,
                                 attrs={"_py": sym}).output
            mname = {"floordiv": "floor_divide", "__and__": "bitwise_and", "__or__": "bitwise_or",
                     "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
                     "__rshift__": "bitwise_right_shift"}.get(name, name)
            if opname == "Mod":
                mname = "remainder"
            if not (tb is T.TensorType or B.is_number(tb) or tb is T.AnyType):
                self.error(f"Arguments for call are not valid: unsupported operand type(s) for "
                           f"{sym}: 'Tensor' and '{tb.annotation}'", e)
            return self.call_tensor_method(a, mname, [b], {}, e)
        rt = B.number_result(name, ta, tb)
        if rt is None:
            if ta == tb and ta is T.StrType and name in ("add", "mul"):
                rt = T.StrType
            elif isinstance(ta, T.ListType) and ta == tb and name == "add":
                rt = ta
            elif isinstance(ta, T.ListType) and tb is T.IntType and name == "mul":
                rt = ta
            elif isinstance(ta, T.TupleType) and isinstance(tb, T.TupleType) and name == "add":
                rt = T.TupleType(ta.elems + tb.elems)
            elif T.AnyType in (ta, tb):
                rt = T.AnyType
            else:
                self.error(f"Arguments for call are not valid.\nThe following variants are "
                           f"available:\n  aten::{name}(...)\n  Expected a value of type "
                           f"'{ta.annotation}' for argument 'b' but instead found type "
                           f"'{tb.annotation}'", e)
        attrs = {"_py": sym}
        if name == "pow" and rt is T.FloatType:
            fn, attrs = B.float_pow, {}
        ca, cb = a.constant(), b.constant()
        if ca is not _NOT and cb is not _NOT and isinstance(ca, (int, float, str)) \
                and isinstance(cb, (int, float, str)):
            try:
                return self.const(fn(ca, cb))
            except Exception:
                pass
        return self.emit(f"aten::{name}", [a, b], [rt], e, fn=fn, attrs=attrs).output

    def e_Compare(self, e):
        left = self.value(self.expr(e.left), e.left)
        result = None
        for op, right_node in zip(e.ops, e.comparators):
            right = self.value(self.expr(right_node), right_node)
            r = self.compare(type(op).__name__, left, right, e)
            result = r if result is None else self.emit(
                "aten::__and__", [result, r], [T.BoolType], e, fn=operator.and_).output
            left = right
        return S.SimpleValue(result)

    def compare(self, opname, a, b, e):
        name, fn, sym = B.COMPARE_OPERATORS[opname]
        ta, tb = a.type, b.type
        if opname in ("Is", "IsNot"):
            # statically known: `x is None` where x cannot be None
            none_a, none_b = ta is T.NoneType, tb is T.NoneType
            may_a = none_a or isinstance(ta, T.OptionalType) or ta is T.AnyType or \
                isinstance(ta, T.UnionType) and T.NoneType in ta.elems
            may_b = none_b or isinstance(tb, T.OptionalType) or tb is T.AnyType or \
                isinstance(tb, T.UnionType) and T.NoneType in tb.elems
            if (none_a and not may_b) or (none_b and not may_a):
                return self.const(opname == "IsNot")
            if none_a and none_b:
                return self.const(opname == "Is")
            if ta in _VALUE_TYPES and tb in _VALUE_TYPES:   # ints (dtypes...): by value
                fn, sym = (operator.eq, "==") if opname == "Is" else (operator.ne, "!=")
            return self.emit(f"aten::{name}", [a, b], [T.BoolType], e, fn=fn,
                             attrs={"_py": sym}).output
        if opname in ("In", "NotIn"):
            if isinstance(tb, T.ClassType) and not tb.is_module:
                r = self.resolver.call_method(self, b, "__contains__", [a], {}, e)
            else:
                r = self.emit("aten::__contains__", [b, a], [T.BoolType], e,
                              fn=operator.contains).output
            if opname == "NotIn":
                r = self.emit("aten::__not__", [r], [T.BoolType], e, fn=operator.not_,
                              attrs={"_py": "not "}).output
            return r
        if ta is T.TensorType or tb is T.TensorType:
            if ta is not T.TensorType:
                return self.emit(f"aten::{name}", [a, b], [T.TensorType], e, fn=fn,
                                 attrs={"_py": sym}).output
            return self.call_tensor_method(a, name, [b], {}, e)
        ca, cb = a.constant(), b.constant()
        if ca is not _NOT and cb is not _NOT and isinstance(ca, (int, float, str, type(None))) \
                and isinstance(cb, (int, float, str, type(None))):
            return self.const(bool(fn(ca, cb)))
        return self.emit(f"aten::{name}", [a, b], [T.BoolType], e, fn=fn,
                         attrs={"_py": sym}).output

    def e_Subscript(self, e):
        base = self.expr(e.value)
        if isinstance(base, S.ModuleValue) and self._is_container(base):
            items = self.resolver.container_items(self, base, e)
            if isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str):
                keys = list(base.module._modules)
                if e.slice.value not in keys:
                    self.error(f"Key Error, {e.slice.value}", e)
                return items[keys.index(e.slice.value)]
            k = self.constant_int(e.slice)
            if k is None:
                self.error("Expected an integer constant index into a module list", e)
            if not -len(items) <= k < len(items):
                self.error(f"index {k} is out of range", e)
            return items[k]
        if isinstance(base, (S.ModuleList, S.TupleSugar)):
            k = self.constant_int(e.slice)
            if k is None:
                if isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str) \
                        and isinstance(base, S.ModuleList) and base.keys:
                    return base.items[base.keys.index(e.slice.value)]
                self.error("Expected an integer constant index into a module list or tuple", e)
            return base.items[k]
        if isinstance(base, S.PythonConstant) and isinstance(base.value, (tuple, list)):
            k = self.constant_int(e.slice)
            if k is not None:
                return self.resolver.wrap(base.value[k], None)
        v = self.value(base, e.value)
        t = v.type
        if t is T.TensorType:
            tmpl, inputs = self.index_template(e.slice)
            kind = _index_kind(tmpl)
            return S.SimpleValue(self.emit(kind, [v] + inputs, [T.TensorType], e,
                                           {"_index": tmpl}).output)
        if isinstance(t, T.TupleType):
            if isinstance(e.slice, ast.Slice):
                lo, hi, st = (self.constant_int(x) if x is not None else None
                              for x in (e.slice.lower, e.slice.upper, e.slice.step))
                idx = range(len(t.elems))[slice(lo, hi, st)]
                vals = [self.emit("prim::TupleIndex", [v, self.const(i)], [t.elems[i]], e).output
                        for i in idx]
                return S.SimpleValue(self.emit("prim::TupleConstruct", vals,
                                               [T.TupleType(tuple(x.type for x in vals))], e).output)
            k = self.constant_int(e.slice)
            if k is None:
                self.error("tuple indices must be integer constants", e)
            if not -len(t.elems) <= k < len(t.elems):
                self.error(f"Tuple index out of range. Tuple is length {len(t.elems)} and index "
                           f"is {k}", e)
            return S.SimpleValue(self.emit("prim::TupleIndex", [v, self.const(k)],
                                           [t.elems[k]], e).output)
        if isinstance(t, T.ClassType) and not t.is_module:      # obj[k] -> __getitem__
            key = self.value(self.expr(e.slice), e.slice)
            return S.SimpleValue(self.resolver.call_method(self, v, "__getitem__", [key], {}, e))
        if isinstance(e.slice, ast.Slice):
            parts = [self.value(self.expr(x), x) if x is not None else self.const(None)
                     for x in (e.slice.lower, e.slice.upper, e.slice.step)]
            if isinstance(t, T.ListType) or t is T.StrType:
                return S.SimpleValue(self.emit("aten::slice", [v] + parts, [t], e,
                                               fn=_py_slice).output)
        key = self.value(self.expr(e.slice), e.slice)
        if isinstance(t, T.ListType):
            et = t.elem
        elif isinstance(t, T.DictType):
            et = t.value
        elif t is T.StrType:
            et = T.StrType
        elif t is T.AnyType:
            et = T.AnyType
        else:
            self.error(f"'{t.annotation}' object is not subscriptable", e)
        kind = "aten::__getitem__"
        return S.SimpleValue(self.emit(kind, [v, key], [et], e, fn=operator.getitem).output)

    def constant_int(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
                isinstance(node.operand, ast.Constant):
            return -node.operand.value
        try:
            v = self.expr(node)
        except CompileError:
            return None
        if isinstance(v, S.PythonConstant) and isinstance(v.value, int):
            return v.value
        if isinstance(v, S.SimpleValue):
            c = v.value.constant()
            if isinstance(c, int):
                return c
        return None

    def index_template(self, sl):
        """A Tensor index as a template the code generator writes out (``x[a, 1:b, None]``):
        ``("slice", lo, hi, step)`` / ``("value", k)`` / ``None`` / ``Ellipsis``, with ``k``
        positions into the returned input list."""
        inputs = []

        def one(node):
            if isinstance(node, ast.Slice):
                parts = []
                for x in (node.lower, node.upper, node.step):
                    if x is None:
                        parts.append(None)
                    else:
                        inputs.append(self.value(self.expr(x), x))
                        parts.append(len(inputs))
                return ("slice",) + tuple(parts)
            if isinstance(node, ast.Constant) and node.value is None:
                return None
            if isinstance(node, ast.Constant) and node.value is Ellipsis:
                return Ellipsis
            item = self.expr(node)
            if isinstance(item, S.PythonConstant) and item.value is Ellipsis:
                return Ellipsis
            v = self.value(item, node)
            if isinstance(v.type, T.TupleType) and not isinstance(node, ast.Tuple):
                inputs.append(v)
                return ("splat", len(inputs))
            inputs.append(v)
            return ("value", len(inputs))

        if isinstance(sl, ast.Tuple):
            tmpl = tuple(one(x) for x in sl.elts)
        else:
            tmpl = one(sl)
        return tmpl, inputs

    # -- conditions ----------------------------------------------------------------------
    def to_bool(self, v, node):
        t = v.type
        if t is T.BoolType:
            return v
        if t is T.TensorType:
            return self.emit("aten::Bool", [v], [T.BoolType], node, fn=bool).output
        if t in (T.IntType, T.FloatType, T.NumberType, T.AnyType) or isinstance(
                t, (T.ListType, T.DictType, T.OptionalType)) or t is T.StrType:
            return self.emit("aten::Bool", [v], [T.BoolType], node, fn=bool).output
        if t is T.NoneType:
            return self.const(False)
        self.error(f"Could not cast value of type {t.annotation} to bool", node)

    def refinements(self, test):
        """Type refinements a condition implies: ({name: type if true}, {name: if false})."""
        rt, rf = {}, {}
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right, op = test.left, test.comparators[0], test.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                name_node = left if isinstance(right, ast.Constant) and right.value is None else \
                    right if isinstance(left, ast.Constant) and left.value is None else None
                if isinstance(name_node, ast.Name):
                    cur = self.env.lookup(name_node.id)
                    if isinstance(cur, S.SimpleValue) and isinstance(cur.value.type, T.OptionalType):
                        target = rt if isinstance(op, ast.IsNot) else rf
                        target[name_node.id] = cur.value.type.elem
                        other = rf if isinstance(op, ast.IsNot) else rt
                        other[name_node.id] = T.NoneType
                    elif isinstance(cur, S.SimpleValue) and isinstance(cur.value.type, T.UnionType) \
                            and T.NoneType in cur.value.type.elems:
                        target = rt if isinstance(op, ast.IsNot) else rf
                        target[name_node.id] = cur.value.type.without(T.NoneType)
                        other = rf if isinstance(op, ast.IsNot) else rt
                        other[name_node.id] = T.NoneType
        elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for v in test.values:
                rt.update(self.refinements(v)[0])
        elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            for v in test.values:
                rf.update(self.refinements(v)[1])
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            a, b = self.refinements(test.operand)
            rt, rf = b, a
        elif isinstance(test, ast.Call) and isinstance(test.func, (ast.Name, ast.Attribute)) \
                and ast.unparse(test.func).split(".")[-1] == "isinstance" and len(test.args) == 2 \
                and isinstance(test.args[0], ast.Name):
            cur = self.env.lookup(test.args[0].id)
            if isinstance(cur, S.SimpleValue):
                try:
                    t = self.isinstance_types(test.args[1])
                except Exception:
                    t = None
                ct = cur.value.type
                if t is not None and len(t) == 1 and (ct is T.AnyType or isinstance(
                        ct, T.OptionalType)):
                    rt[test.args[0].id] = t[0]
                elif t is not None and isinstance(ct, T.UnionType):
                    hit = T.make_union([x for x in ct.elems if any(T.is_subtype(x, u) for u in t)])
                    rt[test.args[0].id] = hit
                    rest = ct
                    for u in t:
                        rest = rest.without(u) if isinstance(rest, T.UnionType) else rest
                    rf[test.args[0].id] = rest
        return rt, rf

    # -- calls ---------------------------------------------------------------------------
    def e_Call(self, e, type_hint=None):
        for kw in e.keywords:
            if kw.arg is None:
                raise NotSupportedError("keyword-arg expansion is not supported",
                                        self.span(kw.value))
        fn = self.expr(e.func)
        return self.call(fn, e.args, {k.arg: k.value for k in e.keywords}, e, type_hint)

    def call(self, fn, arg_nodes, kw_nodes, e, type_hint=None):
        from ember.jit import _calls
        return _calls.call(self, fn, arg_nodes, kw_nodes, e, type_hint)

    def call_tensor_method(self, v, name, args, kwargs, e):
        from ember.jit import _calls
        return _calls.tensor_method(self, v, name, args, kwargs, e)

    def iteration(self, it, node):
        from ember.jit import _calls
        return _calls.iteration(self, it, node)

    def _is_container(self, mod):
        from ember.jit._modules import is_container
        return is_container(mod.module)

    def unrolled_items(self, it, node):
        if isinstance(it, S.ModuleValue) and self._is_container(it):
            from ember import nn
            kind = "keys" if issubclass(it.module.original_class, nn.ModuleDict) else "values"
            return self.resolver.container_items(self, it, node, kind)
        if isinstance(it, S.ModuleList):
            return list(it.items)
        if isinstance(it, S.TupleSugar):
            return list(it.items)
        if isinstance(it, S.PythonConstant) and isinstance(it.value, (tuple, list)):
            return [self.resolver.wrap(x, None) for x in it.value]
        if isinstance(it, S.SimpleValue) and isinstance(it.value.type, T.TupleType) \
                and not it.value.type.names:
            t = it.value.type
            return [S.SimpleValue(self.emit("prim::TupleIndex", [it.value, self.const(k)],
                                            [et], node).output) for k, et in enumerate(t.elems)]
        from ember.jit import _calls
        return _calls.unrolled_call_items(self, it, node)

    def annotation(self, node):
        from ember.jit import _calls
        return _calls.annotation(self, node)

    def isinstance_types(self, node):
        from ember.jit import _calls
        return _calls.isinstance_types(self, node)

    def coerce(self, v, t, node, msg):
        """Check ``v`` fits type ``t``; an int/float literal list or None is retyped."""
        if T.is_subtype(v.type, t):
            return v
        tt = T.unwrap_optional(t)
        if v.node is not None and v.node.kind in ("prim::ListConstruct", "prim::DictConstruct") \
                and not v.node.inputs and isinstance(tt, (T.ListType, T.DictType)):
            v.set_type(tt)
            return v
        if t is T.FloatType and v.type is T.IntType:
            return self.emit("aten::Float", [v], [T.FloatType], node, fn=float).output
        if v.type is T.TensorType and tt in (T.IntType, T.FloatType):
            return self.implicit_scalar(v, tt, node)
        if v.type is T.AnyType:
            return self.cast(v, t)
        if isinstance(tt, T.ListType) and isinstance(v.type, T.TupleType) and all(
                T.is_subtype(x, tt.elem) for x in v.type.elems):
            return self.tuple_to_list(v, tt, node)
        if isinstance(tt, T.ListType) and isinstance(v.type, T.ListType) and \
                v.node is not None and v.node.kind == "prim::ListConstruct" and all(
                    T.is_subtype(i.type, tt.elem) for i in v.node.inputs):
            v.set_type(tt)
            return v
        self.error(f"{msg} {self.type_name(v)}", node)

    def tuple_to_list(self, v, t, node):
        """torch turns a tuple into a list where a list is expected (``self.stride``)."""
        c = v.constant()
        if isinstance(c, tuple):
            return self.const(list(c)).set_type(t)
        items = [self.emit("prim::TupleIndex", [v, self.const(k)], [et], node).output
                 for k, et in enumerate(v.type.elems)]
        return self.emit("prim::ListConstruct", items, [t], node).output

    def implicit_scalar(self, v, t, node):
        """torch converts a one-element Tensor to an int/float where one is expected."""
        kind, fn = ("aten::IntImplicit", _int_implicit) if t is T.IntType else \
            ("aten::FloatImplicit", _float_implicit)
        return self.emit(kind, [v], [t], node, fn=fn).output


_ENUM_GETTERS = {"value": operator.attrgetter("value"), "name": operator.attrgetter("name")}


def _int_implicit(x):
    if x.dim() != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar "
                           "argument")
    if x.is_floating_point():
        raise RuntimeError("Cannot input a tensor of type Float as an integral argument")
    return int(x)


def _float_implicit(x):
    if x.dim() != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar "
                           "argument")
    return float(x)


def _format(fmt, *args):
    return fmt.format(*args)


def _py_slice(seq, lo, hi, step):
    return seq[lo:hi:step]


def _index_kind(tmpl):
    if isinstance(tmpl, tuple) and tmpl and tmpl[0] == "slice":
        return "aten::slice"
    if isinstance(tmpl, tuple) and tmpl and tmpl[0] == "value":
        return "aten::select"
    return "aten::index"
