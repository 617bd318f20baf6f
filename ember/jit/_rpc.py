"""``rpc.rpc_async`` / ``rpc_sync`` / ``remote`` in scripted code (torch's
``prim::rpc_async``...): ``rpc_async(to, fn, args=(), kwargs=None, timeout=-1.0)`` where
``fn`` is a scripted function (or an ember op); the result is ``Future[R]``, ``R`` or
``RRef[R]`` for ``fn``'s return type ``R``. At run time the call goes through
``ember.distributed.rpc`` (scripted functions travel by reference, see ``rpc/_wire.py``)."""
from __future__ import annotations

import functools

from ember.jit import _sugar as S
from ember.jit import _types as T

_PARAMS = ("to", "func", "args", "kwargs", "timeout")


def _bind(c, name, arg_nodes, kw_nodes, e):
    if len(arg_nodes) > len(_PARAMS):
        c.error(f"rpc.{name}() takes at most {len(_PARAMS)} arguments", e)
    bound = dict(zip(_PARAMS, arg_nodes))
    for k, node in kw_nodes.items():
        if k not in _PARAMS or k in bound:
            c.error(f"rpc.{name}() got an unexpected or repeated argument '{k}'", e)
        bound[k] = node
    if "to" not in bound or "func" not in bound:
        c.error(f"rpc.{name}() needs the destination and the function", e)
    return bound


def _target(c, name, sugar, e):
    """(the Python object sent over RPC, its return type)."""
    if isinstance(sugar, S.ScriptFunctionRef):
        from ember.jit._script import _FUNCTIONS, ScriptFunction
        fn = sugar.function
        pyfn = next((p for p, f in list(_FUNCTIONS.items()) if f is fn), None)
        return ScriptFunction(fn, pyfn), fn.return_type
    if isinstance(sugar, S.Builtin) and sugar.family == "ember":
        return sugar.fn, T.TensorType
    c.error(f"rpc.{name}() expects a scripted function or a builtin op as its function", e)


def _run(kind, func, to, args, kwargs, timeout):
    from ember.distributed import rpc
    call = getattr(rpc, kind)
    return call(to, func, tuple(args), kwargs, -1.0 if timeout is None else timeout)


def rpc_call(c, name, arg_nodes, kw_nodes, e):
    """The Value of a scripted ``rpc.<name>(...)`` call."""
    bound = _bind(c, name, arg_nodes, kw_nodes, e)
    to = c.value(c.expr(bound["to"]), bound["to"])
    func, rt = _target(c, name, c.expr(bound["func"]), e)
    inputs = [to]
    for k in ("args", "kwargs", "timeout"):
        node = bound.get(k)
        inputs.append(c.const(None) if node is None else c.value(c.expr(node), node))
    if inputs[1].type is T.NoneType:
        inputs[1] = c.emit("prim::TupleConstruct", [], [T.TupleType(())], e).output
    out = {"rpc_async": T.FutureType(rt), "rpc_sync": rt, "remote": T.RRefType(rt)}[name]
    return c.emit(f"prim::{name}", inputs, [out], e, {"side_effects": True},
                  fn=functools.partial(_run, name, func)).output


def rref_method(c, v, name, args, e):
    """``to_here()``, ``local_value()``, ``is_owner()`` of an ``RRef[T]``."""
    results = {"to_here": v.type.elem, "local_value": v.type.elem, "is_owner": T.BoolType}
    if name not in results:
        c.error(f"RRef method '{name}' is not supported in scripted code", e)
    return c.emit(f"aten::{name}", [v] + list(args), [results[name]], e,
                  fn=lambda r, *a: getattr(r, name)(*a)).output
