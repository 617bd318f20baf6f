"""The closed instruction set of torch's mobile bytecode, interpreted over a value stack
and a register file (registers are numbered from 1).

    OP k / OPN k n   call operator k (its argument count from the operator table / n)
    LOAD r / MOVE r  push register r (MOVE also clears it);  STORE r / STOREN r n  pop
    DROP / DROPR r   pop and discard / clear register r;       LOADC k  push constant k
    JF d / JMP d     pop a bool, jump by d when false / always jump by d
    LOOP d n         stack: trip, max, cond, n-2 carried; continue (i pushed in cond's
                     place) or leave with the carried values and jump by d
    RET              return the top of the stack
    GET_ATTR k / SET_ATTR k, LIST_CONSTRUCT t n, LIST_UNPACK n, TUPLE_CONSTRUCT n,
    TUPLE_SLICE b e, DICT_CONSTRUCT t n, DICT_INDEX, CREATE_OBJECT t, ISINSTANCE t n,
    DIM, __NOT__, __IS__, __ISNOT__, FORMAT n, RAISE_EXCEPTION, WARN, UN_INITIALIZED,
    TYPECHECK, NAMED_TUPLE_CONSTRUCT t n
"""
from __future__ import annotations

import numpy as np

from ._format import Object

INSTRUCTIONS = frozenset(
    "OP OPN LOAD MOVE STORE STOREN DROP DROPR LOADC JF JMP LOOP RET GET_ATTR SET_ATTR "
    "LIST_CONSTRUCT LIST_UNPACK TUPLE_CONSTRUCT TUPLE_SLICE DICT_CONSTRUCT DICT_INDEX "
    "CREATE_OBJECT ISINSTANCE DIM __NOT__ __IS__ __ISNOT__ FORMAT RAISE_EXCEPTION WARN "
    "UN_INITIALIZED TYPECHECK NAMED_TUPLE_CONSTRUCT".split())

_EXCEPTIONS = {"builtins.ValueError": ValueError, "builtins.TypeError": TypeError,
               "builtins.IndexError": IndexError, "builtins.KeyError": KeyError,
               "builtins.AssertionError": AssertionError,
               "builtins.NotImplementedError": NotImplementedError}


class Function:
    """One method's code: instructions, resolved operators, constants, types, registers."""

    def __init__(self, name, code, schema, kernels):
        self.name = name
        self.instructions = [tuple(i) for i in code["instructions"]]
        for op, *_ in self.instructions:
            if op not in INSTRUCTIONS:
                raise RuntimeError(f"ember.lite: unsupported instruction {op} in {name}")
        self.constants = list(code["constants"])
        self.types = list(code.get("types", ()))
        self.register_size = int(code["register_size"])
        self.operators, missing = [], []
        for entry in code["operators"]:
            full = entry[0] + ("." + entry[1] if entry[1] else "")
            nargs = entry[2] if len(entry) > 2 else None
            kernel = kernels.get(full)
            if kernel is None:
                missing.append(full)
            self.operators.append((kernel, nargs, full))
        if missing:
            raise RuntimeError("Following ops cannot be found: [" + ", ".join(missing) +
                               "]. Please check if the operator library is included in the "
                               "build (ember.lite selective build).")
        self.arguments = [dict(a).get("name") for a in schema.get("arguments", ())]

    def __call__(self, *args):
        return run(self, list(args))


def _call_op(entry, stack, n):
    kernel, nargs, _ = entry
    if n is None:
        n = nargs if nargs is not None else kernel.nargs
    if n:
        args = stack[-n:]
        del stack[-n:]
    else:
        args = ()
    out = kernel(*args)
    outs = kernel.outputs
    if outs == 1:
        stack.append(out)
    elif outs:
        stack.extend(out)


def run(fn, stack):
    regs = [None] * (fn.register_size + 1)
    code, consts, ops = fn.instructions, fn.constants, fn.operators
    pc = 0
    while True:
        op, x, n = code[pc]
        if op == "LOADC":
            stack.append(consts[x])
        elif op == "LOAD":
            stack.append(regs[x])
        elif op == "MOVE":
            stack.append(regs[x])
            regs[x] = None
        elif op == "STORE":
            regs[x] = stack.pop()
        elif op == "OP":
            _call_op(ops[x], stack, None)
        elif op == "GET_ATTR":
            stack.append(stack.pop().values[x])
        elif op == "LIST_CONSTRUCT":
            items = stack[len(stack) - n:]
            del stack[len(stack) - n:]
            stack.append(items)
        elif op == "JF":
            pc += 1 if stack.pop() else x
            continue
        elif op == "JMP":
            pc += x
            continue
        elif op == "STOREN":
            for i in range(n - 1, -1, -1):
                regs[x + i] = stack.pop()
        elif op == "DROPR":
            regs[x] = None
        elif op == "DROP":
            stack.pop()
        elif op == "LOOP":
            base = len(stack) - (n + 1)
            trip, limit, cond = stack[base], stack[base + 1], stack[base + 2]
            if trip < limit and cond:
                stack[base + 2] = trip
                stack[base] = trip + 1
                pc += 1
            else:
                carried = stack[base + 3:]
                del stack[base:]
                stack.extend(carried)
                pc += x
            continue
        elif op == "RET":
            return stack[-1]
        elif op == "OPN":
            _call_op(ops[x], stack, n)
        elif op == "DIM":
            stack.append(stack.pop().ndim)
        elif op == "__NOT__":
            stack.append(not stack.pop())
        elif op == "__IS__":
            b = stack.pop()
            stack.append(stack.pop() is b)
        elif op == "__ISNOT__":
            b = stack.pop()
            stack.append(stack.pop() is not b)
        elif op == "TUPLE_CONSTRUCT":
            items = tuple(stack[len(stack) - x:]) if x else ()
            if x:
                del stack[len(stack) - x:]
            stack.append(items)
        elif op == "NAMED_TUPLE_CONSTRUCT":
            items = tuple(stack[len(stack) - n:]) if n else ()
            if n:
                del stack[len(stack) - n:]
            stack.append(items)
        elif op in ("LIST_UNPACK",):
            stack.extend(stack.pop())
        elif op == "TUPLE_SLICE":
            t = stack.pop()
            stack.append(tuple(t[x:x + n]))
        elif op == "DICT_CONSTRUCT":
            items = stack[len(stack) - 2 * n:]
            del stack[len(stack) - 2 * n:]
            stack.append(dict(zip(items[0::2], items[1::2])))
        elif op == "DICT_INDEX":
            key = stack.pop()
            stack.append(stack.pop()[key])
        elif op == "SET_ATTR":
            value = stack.pop()
            stack.pop().values[x] = value
        elif op == "CREATE_OBJECT":
            stack.append(Object(fn.types[x]))
        elif op == "FORMAT":
            args = stack[len(stack) - x:]
            del stack[len(stack) - x:]
            stack.append(format_string(args[0], args[1:]))
        elif op == "RAISE_EXCEPTION":
            cls_name = stack.pop()
            msg = stack.pop()
            raise _EXCEPTIONS.get(cls_name, RuntimeError)(msg)
        elif op == "WARN":
            import warnings
            stack.pop()
            warnings.warn(str(stack.pop()))
        elif op == "UN_INITIALIZED":
            stack.append(None)
        elif op == "ISINSTANCE":
            stack.append(True)   # types were checked when the model was compiled
        else:           # TYPECHECK: inputs already have the profiled types
            stack.append(True)
        pc += 1


def format_string(fmt, args):
    """aten::format: each ``{}`` takes the next argument (tensors print as arrays)."""
    parts = fmt.split("{}")
    out = [parts[0]]
    for i, p in enumerate(parts[1:]):
        a = args[i] if i < len(args) else ""
        out.append(str(a.tolist() if isinstance(a, np.ndarray) else a) + p)
    return "".join(out)
