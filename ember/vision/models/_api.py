"""Model registry, weights handling (checkpoints from the hub cache; ember downloads nothing)
and get_model/list_models."""
import enum
import fnmatch

from ._checkpoints import BASE_URL, CHECKPOINTS, NO_CLASSES

BUILTIN_MODELS = {}


def register_model(name=None):
    """Decorator: record a builder under ``name`` (default: its own name) for get_model."""
    def record(builder):
        key = builder.__name__ if name is None else name
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = builder
        return builder
    return record


def _no_pretrained(name, weights):
    builder = f"{name}(weights=None)" if not name.endswith("_Weights") else "weights=None"
    example = name if not name.endswith("_Weights") else "resnet18"
    raise RuntimeError(
        f"{name}: pretrained weights ({weights!r}) are not available in ember, which downloads "
        f"nothing. Build the model with {builder} and load a local checkpoint "
        f"instead, e.g. model = {example}(weights=None); "
        f"model.load_state_dict(torch.load('path/to/{example}.pth', map_location='cpu')) "
        f"(a torchvision state_dict saved with torch.save loads as is)."
    )


def _check_weights(name, weights, kwargs):
    """Pop the legacy ``pretrained`` argument and refuse any pretrained weights."""
    pretrained = kwargs.pop("pretrained", False)
    kwargs.pop("progress", None)
    if pretrained:
        _no_pretrained(name, "pretrained=True")
    if weights is not None and weights is not False:
        _no_pretrained(name, weights)


class WeightsEnum(enum.Enum):
    """Stand-in for torchvision's weights enums. Members listed in ``_checkpoints`` know their
    checkpoint's URL and load it from the hub cache (``get_state_dict``); nothing is
    downloaded, and ``meta`` / ``transforms`` are not provided."""

    @classmethod
    def verify(cls, obj):
        if obj is None:
            return None
        if isinstance(obj, str):
            key = obj.replace(cls.__name__ + ".", "")
            obj = cls.DEFAULT if key == "DEFAULT" and hasattr(cls, "DEFAULT") else cls[key]
        if not isinstance(obj, cls):
            raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but "
                            f"received {type(obj).__name__}.")
        return obj

    def _file_name(self):
        return dict(CHECKPOINTS.get(type(self).__name__, ())).get(self.name)

    def get_state_dict(self, *args, **kwargs):
        """The checkpoint from ``<hub dir>/checkpoints`` (RuntimeError when it is not there)."""
        import os
        from ember import hub
        file_name = self._file_name()
        if file_name is None:
            _no_pretrained(type(self).__name__, self)
        cached = os.path.join(hub.get_dir(), "checkpoints", file_name)
        if not os.path.exists(cached):
            raise RuntimeError(
                f"{self!r}: the checkpoint {file_name} is not in the hub cache ({cached}) and "
                f"ember downloads nothing. Put torchvision's file there, or build the model "
                f"with weights=None and load a local checkpoint with "
                f"model.load_state_dict(torch.load(path, map_location='cpu')).")
        return hub.load_state_dict_from_url(self.url, map_location="cpu")

    def transforms(self, *args, **kwargs):
        _no_pretrained(type(self).__name__, self)

    @property
    def meta(self):
        _no_pretrained(type(self).__name__, self)

    @property
    def url(self):
        file_name = self._file_name()
        if file_name is None:
            _no_pretrained(type(self).__name__, self)
        return BASE_URL + file_name

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"


def _weights_enum(name):
    members = [m for m, _ in CHECKPOINTS[name]]
    cls = WeightsEnum(name, [(m, m) for m in members])
    cls.DEFAULT = cls[members[-1]]
    return cls


def _pick_weights(enum_cls, weights, kwargs):
    """torchvision's argument handling: legacy ``pretrained=True`` means DEFAULT (with its
    deprecation warnings), strings name members, another model's enum is a TypeError."""
    import warnings
    if "pretrained" in kwargs:
        warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be removed "
                      "in the future, please use 'weights' instead.")
        if kwargs.pop("pretrained"):
            weights = enum_cls.DEFAULT
            warnings.warn(
                "Arguments other than a weight enum or `None` for 'weights' are deprecated "
                "since 0.13 and may be removed in the future. The current behavior is "
                f"equivalent to passing `weights={weights!r}`. You can also use "
                f"`weights={enum_cls.__name__}.DEFAULT` to get the most up-to-date weights.")
    if weights is False:
        weights = None
    return enum_cls.verify(weights)


def define_builders(namespace, table, make):
    """Define and register one builder per ``table`` row, ``name: (weights enum name, config)``:
    ``name(*, weights=None, progress=True, **kwargs)`` returns ``make(config, kwargs)``. The
    builders and the weights enums land in ``namespace``."""
    for name, (enum_name, config) in table.items():
        namespace[enum_name] = _weights_enum(enum_name)
        namespace[name] = register_model(name)(_builder(name, config, make, namespace["__name__"],
                                                        namespace[enum_name]))


def _builder(name, config, make, module, enum_cls):
    def build(*, weights=None, progress=True, **kwargs):
        weights = _pick_weights(enum_cls, weights, kwargs)
        kwargs.pop("progress", None)
        if weights is not None and (enum_cls.__name__, weights.name) not in NO_CLASSES:
            fixed_params(kwargs, num_classes=1000)
        model = make(config, kwargs)
        if weights is not None:
            model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
        return model
    build.__name__ = build.__qualname__ = name
    build.__module__ = module
    build.__doc__ = (f"Build ``{name}``; pretrained ``weights`` load from the hub cache "
                     f"(ember downloads nothing).")
    return build


def fixed_params(kwargs, **values):
    """Set the hyper-parameters an architecture fixes; a caller's differing value is an error."""
    for key, value in values.items():
        if kwargs.setdefault(key, value) != value:
            raise ValueError(f"The parameter '{key}' expected value {value} but got {kwargs[key]} instead.")
    return kwargs


def get_model_builder(name):
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name, **config):
    return get_model_builder(name)(**config)


def _patterns(spec):
    return [spec] if isinstance(spec, str) else list(spec or ())


def list_models(module=None, include=None, exclude=None):
    """Sorted names of the registered models (only ``module``'s when given) that match some
    ``include`` pattern (any, when there are none) and no ``exclude`` pattern (fnmatch's)."""
    include, exclude = _patterns(include), _patterns(exclude)

    def wanted(name, builder):
        if module is not None and builder.__module__.rsplit(".", 1)[0] != module.__name__:
            return False
        if include and not any(fnmatch.fnmatch(name, p) for p in include):
            return False
        return not any(fnmatch.fnmatch(name, p) for p in exclude)
    return sorted(name for name, builder in BUILTIN_MODELS.items() if wanted(name, builder))


def get_weight(name):
    raise RuntimeError(f"get_weight({name!r}): ember has no pretrained weights (it downloads nothing).")


def get_model_weights(name):
    raise RuntimeError(f"get_model_weights({name!r}): ember has no pretrained weights (it downloads nothing).")
