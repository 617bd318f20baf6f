# Functions that TorchScript refuses to compile, one construct each (see test_errors.py).
# Imported twice: `torch` bound to ember and to real torch (HEADER lines rewritten).
from typing import Dict, List, Optional, Tuple

import torch  # HEADER

counter = 0


def try_block(x):
    try:
        y = x + 1
    except Exception:
        y = x
    return y


def lambda_expr(x):
    f = lambda v: v + 1  # noqa: E731
    return f(x)


def global_stmt(x):
    global counter
    return x




def set_literal(x):
    s = {1, 2}
    return x


def set_comprehension(x):
    s = {v for v in [1, 2]}
    return x


def star_args(*xs):
    return xs[0]


def kwargs_def(x, **kw):
    return x



def yield_stmt(x):
    yield x


def nested_def(x):
    def inner(y):
        return y
    return inner(x)


def class_in_function(x):
    class C:
        pass
    return x


def import_stmt(x):
    import math
    return x



def for_else(x):
    for i in range(3):
        x = x + i
    else:
        x = x * 2
    return x


def while_else(x):
    i = 0
    while i < 3:
        i += 1
    else:
        i = 10
    return x + i


def nonlocal_stmt(x):
    y = 1

    def inner():
        nonlocal y
    return x


def takes_int(x: int) -> int:
    return x + 1


def call_type_mismatch(x):
    return takes_int("a")


def branch_type_mismatch(x, flag: bool):
    if flag:
        y = 1
    else:
        y = "one"
    return y


def wrong_return_type(x) -> List[int]:
    return x



def undefined_name(x):
    return x + not_defined_anywhere


def defined_one_branch(x, flag: bool):
    if flag:
        y = x + 1
    return y



def return_type_branches(x, flag: bool):
    if flag:
        return 1
    return "a"


def list_mixed_types(x):
    return [1, "a"]


def annotated_assign_mismatch(x):
    y: int = "a"
    return x


def loop_type_change(x):
    y = 1
    for i in range(3):
        y = "s"
    return x


def bad_method(x):
    return x.not_a_method()


def tuple_index_range(x):
    t = (1, 2)
    return t[5]


def str_times_int(s: str) -> str:
    return s * 2


def starred_assign(x):
    a, *b = [1, 2, 3]
    return x


def dict_unpack(x):
    d = {"a": 1}
    e = {**d}
    return x


def call_kwargs_expansion(x):
    kw = {"dim": 0}
    return x.sum(**kw)


def match_stmt(x, n: int):
    match n:
        case 1:
            return x
    return x


def with_two_items(x):
    with torch.no_grad(), torch.no_grad():
        y = x
    return y


def rt_helper(a, b):
    return torch.mm(a, b)


def rt_outer(a, b):
    c = a + 1
    return rt_helper(c, b) * 2


def rt_index(x, i: int):
    y = x * 2
    return y[i]


class UnrolledBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.ReLU(), torch.nn.Tanh()])

    def forward(self, x):
        for layer in self.layers:
            if x.sum() > 0:
                break
            x = layer(x)
        return x


class NoAttr(torch.nn.Module):
    def forward(self, x):
        return x + self.missing


class BadType(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.obj = object()

    def forward(self, x):
        return x if self.obj is None else x


class SetNew(torch.nn.Module):
    def forward(self, x):
        self.fresh = 1
        return x


class SetConst(torch.nn.Module):
    __constants__ = ["k"]

    def __init__(self):
        super().__init__()
        self.k = 2

    def forward(self, x):
        self.k = 3
        return x


class WrongArgs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x, x)


class AttrTypeChange(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 1

    def forward(self, x):
        self.n = 2.5
        return x


def recursive(x, n: int):
    if n == 0:
        return x
    return recursive(x, n - 1)


def missing_arg(x):
    return helper2(x)


def helper2(x, y):
    return x + y


def unknown_kwarg(x):
    return helper2(x, y=x, z=x)





def none_method(x):
    y = None
    return y.foo()


def list_append_type(x):
    xs: List[int] = []
    xs.append(x)
    return xs



def nested_containers(n: int) -> Dict[str, List[int]]:
    d = torch.jit.annotate(Dict[str, List[int]], {})
    for i in range(n):
        key = "even" if i % 2 == 0 else "odd"
        if key not in d:
            d[key] = []
        d[key].append(i)
    return d


def tensor_bad_kwarg(x):
    return x.sum(dimension=0)


def torch_fn_bad(x):
    return torch.relu(x, 3)
