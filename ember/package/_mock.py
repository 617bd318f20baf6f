"""Stand-ins for mocked modules (this file is itself written into archives as ``_mock.py``).

A mocked module's every attribute is a ``MockedObject``: importing and naming it works,
using it (calling, arithmetic, truth, attribute access ...) raises NotImplementedError.
"""

_USES = (
    "__call__ __getattr__ __setattr__ __delattr__ __getitem__ __setitem__ __delitem__ "
    "__len__ __iter__ __reversed__ __contains__ __bool__ __int__ __float__ __complex__ "
    "__index__ __round__ __trunc__ __floor__ __ceil__ __hash__ __eq__ __ne__ __lt__ __le__ "
    "__gt__ __ge__ __neg__ __pos__ __abs__ __invert__ __add__ __sub__ __mul__ __truediv__ "
    "__floordiv__ __mod__ __divmod__ __pow__ __lshift__ __rshift__ __and__ __or__ __xor__ "
    "__radd__ __rsub__ __rmul__ __rtruediv__ __rfloordiv__ __rmod__ __rdivmod__ __rpow__ "
    "__rlshift__ __rrshift__ __rand__ __ror__ __rxor__ __iadd__ __isub__ __imul__ "
    "__itruediv__ __ifloordiv__ __imod__ __ipow__ __ilshift__ __irshift__ __iand__ __ior__ "
    "__ixor__ __enter__ __exit__ __copy__ __deepcopy__ __reduce__ __reduce_ex__ "
    "__getstate__ __bytes__ __dir__ __sizeof__ __instancecheck__ __subclasscheck__"
).split()


class MockedObject:
    """``MockedObject(qualified_name, _suppress_err=True)``; made any other way (say, by an
    unpickler) it raises at once."""

    def __new__(cls, *args, **kwargs):
        if not kwargs.get("_suppress_err"):
            raise NotImplementedError(
                f"Object '{getattr(cls, '_name', cls.__name__)}' was mocked out during "
                f"packaging but it is being used in '__new__'. If this error is happening "
                f"during 'load_pickle', please ensure that your pickled object doesn't "
                f"contain any mocked objects.")
        return object.__new__(cls)

    def __init__(self, name, _suppress_err=False):
        object.__setattr__(self, "_name", name)

    def __repr__(self):
        return f"MockedObject({self._name})"

    __str__ = __repr__


def _refuse(use):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"Object '{object.__getattribute__(self, '_name')}' was "
                                  f"mocked out during packaging but it is being used in {use}")
    method.__name__ = use
    return method


for _use in _USES:
    setattr(MockedObject, _use, _refuse(_use))
