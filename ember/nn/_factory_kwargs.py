"""``nn.factory_kwargs``: check and merge the ``device``/``dtype``/``memory_format`` keyword
arguments a module passes on to tensor factories."""

_FACTORY_KEYS = ("memory_format", "dtype", "device")


def factory_kwargs(kwargs):
    """A dict for ``ember.empty(..., **d)`` from ``kwargs``: its factory keys plus those of
    an optional nested ``factory_kwargs`` dict (for keys the caller's signature shadows).
    ``TypeError`` on any other key, or on a key given both ways."""
    if kwargs is None:
        return {}
    unexpected = set(kwargs) - {*_FACTORY_KEYS, "factory_kwargs"}
    if unexpected:
        raise TypeError("unexpected kwargs {" + ", ".join(sorted(map(repr, unexpected)))
                        + "}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in _FACTORY_KEYS:
        if key in kwargs:
            if key in merged:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            merged[key] = kwargs[key]
    return merged
