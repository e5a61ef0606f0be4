"""Numeric config fields checked by type before any range check: a string from a command line or a JSON file gets
an error that names the field, not a ``TypeError`` from a comparison such as ``"abc" < 0.08``.

Also :func:`finite_number`, for a number read from a JSON record (a checkpoint's ``pick_geometry``), and the one
check every config tree goes through (:func:`check_numbers`): no number anywhere in it is NaN or infinite, every
number-annotated field holds a number, and every field declared with a range (:func:`in_range`, the range written next
to the field) is inside it.

Shared by the configs that validate their own fields (``executor_vla.track_config.TrackExecutorConfig``,
``tandem.runtime.config.LearnedPlannerConfig``); the field annotations are read as strings, as modules with
``from __future__ import annotations`` store them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tandem.core.errors import ConfigError

#: Dataclass field annotations that must hold numbers; those with ``| None`` also accept None.
NUMBER_TYPES = ("int", "float", "int | None", "float | None")


def non_numbers(config: Any) -> list[tuple[str, str]]:
    """The number-annotated fields of ``config`` whose values are not numbers.

    Args:
        config: a dataclass instance whose module uses ``from __future__ import annotations``.

    Returns:
        ``[(field name, message)]`` in field order, e.g. ``("empty_grip_m", "must be a number or null, got 'abc'")``,
        for each field annotated as one of :data:`NUMBER_TYPES` that holds a bool or a non-number (None is a number
        only where the annotation allows it); empty when every such field holds a number.

    Raises:
        TypeError: ``config`` is not a dataclass instance.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"non_numbers needs a dataclass instance, got {type(config).__name__}")
    out = []
    for f in dataclasses.fields(config):
        if f.type not in NUMBER_TYPES:
            continue
        v, optional = getattr(config, f.name), "None" in f.type
        if (v is None and optional) or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            continue
        out.append((f.name, f"must be a number{' or null' if optional else ''}, got {v!r}"))
    return out


def finite_number(value: Any, where: str) -> float:
    """``value`` as a float where it is a finite JSON number: a Python int or float (numpy's float64 is one), not a
    bool, a numeric string, null, an integer too large for a float, or another numpy scalar.

    Raises:
        ConfigError: anything else, naming ``where`` and the value.
    """
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(float(value))
    except OverflowError:  # a JSON integer too large for a float
        ok = False
    if not ok:
        raise ConfigError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class NumberRange:
    """The values a number field accepts: above ``gt`` / at least ``ge``, below ``lt`` / at most ``le`` (None: no
    bound on that side), in ``unit`` (for messages, e.g. ``"s"``)."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    unit: str = ""

    def contains(self, value: float) -> bool:
        """Whether ``value`` (a finite number) is inside every bound."""
        return ((self.gt is None or value > self.gt) and (self.ge is None or value >= self.ge)
                and (self.lt is None or value < self.lt) and (self.le is None or value <= self.le))

    def describe(self) -> str:
        """The range in words, e.g. ``"> 0 s"``, ``"in [0, 1]"``."""
        low = f"{'(' if self.gt is not None else '['}{_bound(self.gt if self.gt is not None else self.ge)}"
        high = f"{_bound(self.lt if self.lt is not None else self.le)}{')' if self.lt is not None else ']'}"
        lower, upper = self.gt is not None or self.ge is not None, self.lt is not None or self.le is not None
        if lower and upper:
            text = f"in {low}, {high}"
        elif lower:
            text = f"{'>' if self.gt is not None else '>='} {_bound(self.gt if self.gt is not None else self.ge)}"
        elif upper:
            text = f"{'<' if self.lt is not None else '<='} {_bound(self.lt if self.lt is not None else self.le)}"
        else:
            text = "any finite number"
        return f"{text} {self.unit}".rstrip()


def _bound(value: float | None) -> str:
    return f"{value:g}" if value is not None else ""


def in_range(default: Any, *, gt: float | None = None, ge: float | None = None, lt: float | None = None,
             le: float | None = None, unit: str = "") -> Any:
    """A dataclass number field with default ``default`` whose values must lie in the range given (None, where the
    annotation allows it, means "off" and is not checked); :func:`check_numbers` enforces it.

    Example: ``lr: float = in_range(1e-4, gt=0)``; ``abort_after_stale_s: float = in_range(2.0, gt=0, unit="s")``.
    """
    return dataclasses.field(default=default,
                             metadata={"range": NumberRange(gt=gt, ge=ge, lt=lt, le=le, unit=unit)})


def _annotation(f: dataclasses.Field) -> str:
    """A field's annotation as text (``"float | None"``), whether or not its module postpones annotations."""
    t = f.type
    if isinstance(t, str):
        return t
    return t.__name__ if isinstance(t, type) else str(t)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field_fault(f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with ``value`` in field ``f`` as a number (None: nothing, or not a number field)."""
    annotation = _annotation(f)
    optional = "None" in annotation
    if annotation in NUMBER_TYPES and not (value is None and optional) and not _is_number(value):
        return f"must be a number{' or null' if optional else ''}, got {value!r}"
    if annotation in ("int", "int | None") and isinstance(value, float):
        return f"must be an integer, got {value!r}"
    if not _is_number(value):
        return None
    bounds = f.metadata.get("range")
    if not math.isfinite(value) or (bounds is not None and not bounds.contains(value)):
        kind = "an integer" if annotation in ("int", "int | None") else "a finite number"
        wanted = f"{kind} {bounds.describe()}" if bounds is not None else kind
        return f"must be {wanted}{' or null' if optional else ''}, got {value!r}"
    return None


def field_faults(cls: type, values: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """The number faults of ``values`` (field name -> value, e.g. a dataclass's keyword arguments before it is
    built) as fields of the dataclass ``cls``, then of every number nested in them (see :func:`number_faults`).

    Yields:
        ``(key, message)``: the key dotted from ``path``, e.g. ``("train.lr", "must be a finite number > 0, got
        nan")``.
    """
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        key = f"{path}.{f.name}" if path else f.name
        fault = _field_fault(f, values[f.name])
        if fault is not None:
            yield key, fault
        else:
            yield from number_faults(values[f.name], key)


def number_faults(obj: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """The number faults anywhere in ``obj``: a dataclass instance (each field checked by :func:`field_faults`), a
    mapping or a list/tuple (each element), or a number (NaN and infinities refused), outermost first.

    Yields:
        ``(key, message)``, keys dotted from ``path`` (list elements as ``key[i]``).
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        yield from field_faults(type(obj), {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, path)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from number_faults(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from number_faults(v, f"{path}[{i}]")
    elif _is_number(obj) and not math.isfinite(obj):
        yield path, f"must be a finite number, got {obj!r}"


def check_numbers(obj: Any, path: str = "") -> None:
    """Refuse a config tree with a number fault (:func:`number_faults`): a NaN or infinite number anywhere, a
    non-number in a number field, or a value outside its field's declared range (:func:`in_range`).

    Raises:
        ConfigError: the first fault, as one line naming the full key, e.g. ``train.lr must be a finite number > 0,
            got nan``.
    """
    for key, message in number_faults(obj, path):
        raise ConfigError(f"{key} {message}")


#: Set while a whole config tree is being built by a loader that checks it afterwards, naming full keys.
_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("tandem_number_checks_deferred", default=False)


@contextlib.contextmanager
def deferred_number_checks() -> Iterator[None]:
    """Within this block, :func:`check_own_numbers` checks nothing: a loader building a whole config tree (the Hydra
    configs: ``tandem.runtime.config.load``) checks the finished tree itself, so that the error names the full key
    (``train.lr``, not ``lr``)."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def check_own_numbers(config: Any) -> None:
    """:func:`check_numbers` for a config dataclass's ``__post_init__``: every config refuses a NaN, an infinity or a
    value outside a declared range (:func:`in_range`) whoever builds it (a command line, a JSON file, Python code),
    except inside :func:`deferred_number_checks`, whose loader checks the tree itself.

    Raises:
        ConfigError: as :func:`check_numbers`, the key relative to ``config``.
    """
    if not _DEFERRED.get():
        check_numbers(config)
