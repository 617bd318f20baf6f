"""Model registry, weights handling (ember downloads nothing) and get_model/list_models."""
import enum
import fnmatch

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
    """Stand-in for torchvision's weights enums: names exist so that scripts referring to
    them import, but passing one to a builder raises (nothing is downloaded)."""

    @classmethod
    def verify(cls, obj):
        if obj is None:
            return None
        if isinstance(obj, str):
            obj = cls[obj.replace(cls.__name__ + ".", "")]
        return obj

    def get_state_dict(self, *args, **kwargs):
        _no_pretrained(type(self).__name__, self)

    def transforms(self, *args, **kwargs):
        _no_pretrained(type(self).__name__, self)

    @property
    def meta(self):
        _no_pretrained(type(self).__name__, self)

    @property
    def url(self):
        _no_pretrained(type(self).__name__, self)

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"


def _weights_enum(name):
    cls = WeightsEnum(name, [(n, n) for n in ("IMAGENET1K_V1", "IMAGENET1K_V2", "IMAGENET1K_FEATURES")])
    cls.DEFAULT = cls.IMAGENET1K_V1
    return cls


def define_builders(namespace, table, make):
    """Define and register one builder per ``table`` row, ``name: (weights enum name, config)``:
    ``name(*, weights=None, progress=True, **kwargs)`` returns ``make(config, kwargs)``. The
    builders and the (download-refusing) weights enums land in ``namespace``."""
    for name, (enum_name, config) in table.items():
        namespace[enum_name] = _weights_enum(enum_name)
        namespace[name] = register_model(name)(_builder(name, config, make, namespace["__name__"]))


def _builder(name, config, make, module):
    def build(*, weights=None, progress=True, **kwargs):
        _check_weights(name, weights, kwargs)
        return make(config, kwargs)
    build.__name__ = build.__qualname__ = name
    build.__module__ = module
    build.__doc__ = f"Build ``{name}`` with fresh weights (ember downloads no pretrained ones)."
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
