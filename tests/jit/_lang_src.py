# Source of the functions and modules tests/jit/test_language.py scripts. The file is
# imported twice: with `torch` bound to ember and to real torch (the same source text is
# compiled by both), so it must run under either. Its HEADER lines are rewritten by the test.
import math
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import torch  # HEADER
import torch.nn as nn  # HEADER
import torch.nn.functional as F  # HEADER
from torch import Tensor  # HEADER


def unannotated_is_tensor(x, y):
    return x * 2 + y


def scalars(a: int, b: float, c: bool, s: str) -> Tuple[int, float, bool, str]:
    return a * 2 + 1, b / 2.0 + a, c and a > 1, s + "!" + str(a)


def none_value(x):
    y = None
    if y is None:
        return x
    return x + 1


def optional_is_not_none(x, y: Optional[Tensor]):
    if y is not None:
        return x + y
    return x


def optional_is_none(x, k: Optional[int] = None):
    if k is None:
        k = 3
    return x * k


def optional_assert(x, k: Optional[int]):
    assert k is not None
    return x + k


def optional_and(x, a: Optional[int], b: Optional[int]) -> int:
    if a is not None and b is not None:
        return a + b
    return -1


def containers(x):
    xs: List[Tensor] = [x, x * 2]
    d: Dict[str, int] = {"a": 1, "b": 2}
    t: Tuple[int, str] = (1, "z")
    xs.append(x + d["b"])
    return torch.stack(xs).sum(0) + len(t[1]) + t[0]


class Point(NamedTuple):
    x: float
    y: float


def make_point(a: float) -> float:
    p = Point(a, 2.0 * a)
    return p.x + p.y + p[1]


class Acc:
    def __init__(self, start: int):
        self.total = start
        self.items: List[int] = []

    def add(self, v: int) -> int:
        self.total += v
        self.items.append(v)
        return self.total

    def count(self) -> int:
        return len(self.items)


def use_class(n: int) -> int:
    a = Acc(10)
    for i in range(n):
        a.add(i)
    return a.total * 100 + a.count()


def any_type(x: Any, n: int) -> int:
    if n > 0:
        return n
    return -n


def annotate_empty(n: int) -> List[int]:
    out = torch.jit.annotate(List[int], [])
    for i in range(n):
        out.append(i * i)
    return out


def jit_isinstance(x: Any) -> int:
    if torch.jit.isinstance(x, List[int]):
        return 1
    if torch.jit.isinstance(x, Dict[str, int]):
        return 2
    return 0


def local_inference(x):
    a = 1
    b = 2.5
    c = [1, 2, 3]
    d = {"k": x}
    e = (a, b)
    return d["k"] * (a + b + len(c) + e[0])


def refine_branches(x, flag: bool):
    if flag:
        y = x + 1
    else:
        y = None
    if y is None:
        return x
    return y * 2


def if_elif(x, n: int):
    if n == 0:
        r = x
    elif n == 1:
        r = x * 2
    elif n == 2:
        r = x * 3
    else:
        r = -x
    return r


def for_range(n: int) -> int:
    tot = 0
    for i in range(n):
        tot += i
    for i in range(2, n):
        tot += i
    for i in range(n, 0, -2):
        tot += i * 100
    return tot


def for_list_tuple(xs: List[float]) -> float:
    tot = 0.0
    for v in xs:
        tot += v
    for w in (1.0, 2.0, 3.0):
        tot *= w
    return tot


def for_dict_items(d: Dict[str, int]) -> int:
    tot = 0
    for k, v in d.items():
        tot += len(k) * v
    for k in d:
        tot += d[k]
    for v in d.values():
        tot -= v
    return tot


def for_zip_enumerate(a: List[int], b: List[int]) -> int:
    tot = 0
    for x, y in zip(a, b):
        tot += x * y
    for i, x in enumerate(a):
        tot += i * x
    for i, x in enumerate(b, 1):
        tot += i
    return tot


def while_loop(n: int) -> int:
    i, tot = 0, 0
    while i < n:
        tot += i
        i += 1
    return tot


def break_continue(n: int) -> int:
    tot = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i > 7:
            break
        tot += i
    return tot


def early_return(x, n: int):
    if n < 0:
        return -x
    y = x * n
    if n > 5:
        return y + 1
    return y


def return_in_loop(xs: List[int], target: int) -> int:
    for i, v in enumerate(xs):
        if v == target:
            return i
    return -1


def return_in_while(x, limit: float):
    k = 0
    while True:
        x = x * 2
        k += 1
        if float(x.sum()) > limit:
            return x, k


def return_in_nested_loops(n: int) -> Tuple[int, int]:
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                return i, j
    return -1, -1


def comprehensions(x, n: int):
    sq = [i * i for i in range(n)]
    odd = [i for i in range(n)]
    d = {str(i): i * 2 for i in range(n)}
    ts = [x * v for v in sq]
    return torch.stack(ts).sum() + sum(odd) + d["2"]


def aug_assign(x, n: int):
    y = x.clone()
    y += 1
    y *= 2
    y -= x
    y /= 4
    k = n
    k -= 2
    k **= 2
    k %= 7
    ls = [1]
    ls += [2, 3]
    return y + k + len(ls)


def raise_error(x, n: int):
    if n > 3:
        raise ValueError(f"n too big: {n}")
    return x * n


def assert_msg(x, n: int):
    assert n >= 0, "n must be non-negative"
    return x + n


def fstrings(a: int, b: float, s: str) -> str:
    return f"{s}:{a}:{b}:{a * 2}" + "{}-{}".format(a, s) + "x{}y".format(b)


def math_fns(a: float, n: int) -> float:
    return (math.sqrt(a) + math.exp(-a) + math.log(a + 1.0) + math.sin(a) + math.cos(a)
            + math.floor(a) + math.ceil(a) + math.pi + math.e + math.fabs(-a)
            + math.pow(a, 2.0) + math.atan2(a, 1.0) + float(math.gcd(n, 6)) + math.tanh(a)
            + float(math.isnan(a)) + math.log10(a))


def helper_fn(x, k: int):
    return x * k + 1


def calls_script_fn(x):
    return helper_fn(x, 3) + helper_fn(x, k=2)


def torch_functions(x):
    a = torch.cat([x, x], dim=0)
    b = torch.zeros(3, 4, dtype=torch.float32) + torch.ones_like(x)
    c = torch.matmul(x, x.t())
    d = torch.where(x > 0, x, torch.zeros_like(x))
    e = torch.arange(4, dtype=torch.float32)
    f = torch.clamp(x, min=-0.5, max=0.5)
    m, i = torch.max(x, dim=1)
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum() + m.sum() + i.sum()


def functional(x):
    y = F.relu(x) + F.gelu(x) + F.softmax(x, dim=-1) + F.dropout(x, p=0.5, training=False)
    z = F.linear(x, torch.ones(2, 4))
    return y.sum() + z.sum() + F.mse_loss(x, torch.zeros_like(x)) + F.pad(x, [1, 1]).sum()


def tensor_methods(x):
    y = x.view(-1).reshape(2, 6).transpose(0, 1).contiguous()
    z = x.sum(dim=1, keepdim=True).mean() + x.abs().max() + x.exp().log().sum()
    n = x.size(0) + x.dim() + x.numel() + x.shape[1]
    w = x.unsqueeze(0).squeeze(0).permute(1, 0).flatten()
    return y.sum() + z + n + w[0] + x.clamp(0.0, 1.0).float().sum()


def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + x, y.requires_grad


@torch.jit.ignore
def ignored_python(x):
    import numpy as np      # something TorchScript could not compile
    return x * float(np.float64(2.0))


def calls_ignored(x):
    return ignored_python(x) + 1


def uses_is_scripting(x):
    if torch.jit.is_scripting():
        return x + 1
    return x - 1


class ModConstants(nn.Module):
    __constants__ = ["scale"]

    def __init__(self):
        super().__init__()
        self.scale = 3
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x) * self.scale


class ModFinal(nn.Module):
    offset: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.offset = 0.5

    def forward(self, x):
        return x + self.offset


class ModAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.names = torch.jit.Attribute([], List[str])
        self.table = torch.jit.Attribute({}, Dict[str, int])

    def forward(self, x, name: str):
        self.names.append(name)
        self.table[name] = len(self.names)
        return x * len(self.names) + self.table[name]


class ModContainers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)])
        self.acts = nn.ModuleDict({"relu": nn.ReLU(), "sig": nn.Sigmoid()})

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        y = x
        for name, act in self.acts.items():
            y = y + act(x)
        for i, layer in enumerate(self.layers):
            if i == 0:
                y = y + layer(torch.ones(1, 4)).sum()
        return y


class ModMethods(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def helper(self, x, k: int):
        return self.lin(x) * k

    @torch.jit.export
    def exported(self, x):
        return self.helper(x, 5)

    @torch.jit.unused
    def unused_method(self, x):
        import numpy as np
        return np.zeros(3)

    @torch.jit.ignore
    def ignored_method(self, x):
        return x + 100

    def forward(self, x, use: bool = False):
        if use:
            return self.unused_method(x)
        return self.helper(x, 2) + self.ignored_method(x)


def generators_and_with(x, n: int):
    total = sum([v * 2 for v in range(n)]) + len(list(v for v in range(n)))
    with torch.no_grad() as g:
        y = x * total
    with torch.no_grad(), torch.no_grad():
        z = y + 1
    return z


def int_arg(k: int) -> int:
    return k * 2


def tensor_as_int(x) -> int:
    return int_arg(x.sum().long()) + x.long().sum()


def del_statement(x):
    d: Dict[str, int] = {"a": 1, "b": 2}
    del d["a"]
    y = x + 1
    del y
    return x * len(d)


class ModUnrolledExits(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3), nn.ReLU()])

    def forward(self, x, stop: int, skip: int):
        for i, layer in enumerate(self.layers):
            if i == stop:
                return layer(x) * 10
            if i != skip:
                x = layer(x)
        return x


@torch.jit.script
class Vec:
    def __init__(self, x: float, y: float):
        self.x = x
        self.y = y
        self.tag: Optional[str] = None

    def norm(self) -> float:
        return math.sqrt(self.dot(self))

    def dot(self, other: "Vec") -> float:
        return self.x * other.x + self.y * other.y

    def scaled(self, k: float) -> "Vec":
        return Vec(self.x * k, self.y * k)

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> float:
        return self.x if i == 0 else self.y

    @staticmethod
    def unit() -> "Vec":
        return Vec(1.0, 0.0)


def use_vec(a: float) -> float:
    v = Vec(a, 2.0)
    w = v.scaled(2.0)
    return w.norm() + len(v) + v[1] + Vec.unit().x


def takes_vec(v: Vec) -> float:
    return v.x + v.y


def dict_ops(d: Dict[str, int]) -> List[str]:
    keys = sorted(d.keys())
    d2 = dict(d)
    d2["z"] = d.get("a", 5) + d.pop("b", 0)
    out = [k for k in keys]
    out.append(str(len(d2)))
    return out


def list_ops(xs: List[int]) -> Tuple[List[int], int, bool]:
    ys = xs.copy()
    ys.insert(0, 9)
    ys.reverse()
    ys.sort()
    zs = ys[1:-1] + [len(ys)]
    return zs, zs.index(max(zs)), 3 in zs


def str_ops(s: str) -> List[str]:
    parts = s.split(",")
    return [p.strip().upper() for p in parts] + [s.replace("a", "b"), s[::-1], str(s.startswith("x"))]


def tuple_ret(x) -> Tuple[Tensor, Tuple[int, int]]:
    a, (b, c) = x, (1, 2)
    return a * b, (b, c)


def optional_ret(x, flag: bool) -> Optional[Tensor]:
    if flag:
        return x
    return None


def chained(x, a: int) -> bool:
    return 0 < a < 10 and not a == 5 or a is None


def nested_fn_defaults(x, k: int = 3, s: str = "a", f: float = 1.5, t: Optional[Tensor] = None):
    if t is not None:
        x = x + t
    return x * k * f + len(s)


def tensor_index_ops(x):
    y = x.clone()
    y[y > 0] = 0.0
    y[:, 0] = 1.0
    idx = torch.tensor([0, 2])
    return y[idx], y[..., 1:], y[None, :, 0], y[-1]


def int_float_ops(a: int, b: float) -> Tuple[int, float, float, int, bool]:
    return a // 3, b ** 2, a / 2, a % 3, float(a) == b


def while_cond(x):
    i = 0
    while i < 3 and bool(x.sum() < 100):
        x = x * 2
        i += 1
    return x, i


def device_dtype(x):
    y = x.to(torch.float64)
    z = torch.zeros(2, dtype=x.dtype, device=x.device)
    return y.dtype == torch.float64, z, x.shape, x.size(), x.is_floating_point()


class ModSub(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    @torch.jit.export
    def half(self, x):
        return self.lin(x) / 2

    def forward(self, x):
        return self.lin(x)


class ModFeatures(nn.Module):
    cache: Optional[Tensor]
    __constants__ = ["sizes"]

    def __init__(self):
        super().__init__()
        self.sub = ModSub()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 1), "b": nn.Linear(3, 2)})
        self.register_buffer("running", torch.zeros(3))
        self.cache = None
        self.sizes = [1, 2]
        self.names: List[str] = ["x"]
        self.scale = 0.5
        self.counter = 0

    def forward(self, x, which: str = "a"):
        y = self.sub(x) + self.sub.half(x)
        y = self.layers[-1](y) + self.layers[0](y) * len(self.layers)
        if self.training:
            self.running.mul_(0.9).add_(y.mean(0) * 0.1)
        cache = self.cache
        if cache is None:
            self.cache = y.detach()
        else:
            y = y + cache
        self.counter += len(self.sizes)
        out = self.heads["a"](y).sum() + self.heads["b"](y).sum()
        for name, head in self.heads.items():
            if name == which:
                out = out + head(y).mean()
        assert isinstance(self.scale, float)
        if not torch.jit.is_tracing():
            out = out * self.scale
        return out, self.counter, self.names


class Out(NamedTuple):
    value: Tensor
    count: int
    name: str



def optional_list(xs: Optional[List[int]] = None) -> int:
    if xs is None:
        return -1
    total = 0
    for v in xs:
        total += v
    return total


def namedtuple_out(x) -> Out:
    o = Out(x * 2, 3, "n")
    return Out(o.value + 1, o.count + 1, o.name + "!")


def isinstance_any(x: Any) -> str:
    if isinstance(x, int):
        return "int"
    elif isinstance(x, str):
        return "str:" + x
    elif isinstance(x, Tensor):
        return "tensor"
    return "other"


def optional_tensor_isinstance(x: Optional[Tensor]) -> Tensor:
    if isinstance(x, Tensor):
        return x + 1
    return torch.zeros(1)


def tuple_of_lists(x) -> Tuple[List[Tensor], List[float]]:
    ts = [x, x + 1]
    fs = [float(t.sum()) for t in ts]
    return ts, fs


def min_max_sum(xs: List[float]) -> Tuple[float, float, float, int]:
    return min(xs), max(xs), sum(xs), len(xs)


def ternary_chain(a: int) -> str:
    return "neg" if a < 0 else "zero" if a == 0 else "pos"


def bool_ops(a: bool, b: bool) -> Tuple[bool, bool, bool, int]:
    return a and b, a or b, not a, int(a) + int(b)


def float_special(x: float) -> Tuple[bool, bool, float, int]:
    return math.isnan(x), math.isinf(x), math.fabs(x), int(x)


def list_of_tuples(n: int) -> List[Tuple[int, str]]:
    out: List[Tuple[int, str]] = []
    for i in range(n):
        out.append((i, str(i)))
    return out


def string_format_methods(a: int, s: str) -> str:
    return "{} and {}".format(a, s) + s.join(["x", "y"]) + s.lower() + str(s.find("b"))


def while_break_else(n: int) -> int:
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i


def tensor_list_ops(x):
    parts = x.split(2)
    joined = torch.cat(parts, 0)
    first, rest = parts[0], parts[1:]
    return joined.sum() + first.sum() + len(rest)


def grad_mode(x):
    with torch.no_grad():
        y = x * 2
    z = x * 3
    return y.requires_grad, z.requires_grad, torch.is_grad_enabled()


def union_narrowing(x: Union[int, str, List[int]]) -> str:
    if isinstance(x, int):
        return str(x + 1)
    elif isinstance(x, str):
        return x + "!"
    return str(len(x))


def union_with_none(x: Union[int, None, str]) -> int:
    if x is None:
        return -1
    if isinstance(x, int):
        return x
    return len(x)


class ModProperty(nn.Module):
    __jit_unused_properties__ = ["not_scriptable"]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.k = 3

    @property
    def scale(self) -> int:
        return self.k * 2

    @property
    def not_scriptable(self):
        import numpy
        return numpy.zeros(1)

    def forward(self, x):
        return self.lin(x) * self.scale
