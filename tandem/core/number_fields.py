"""Numeric config fields checked by type before any range check: a string from a command line or a JSON file gets
an error that names the field, not a ``TypeError`` from a comparison such as ``"abc" < 0.08``.

Also :func:`finite_number`, for a number read from a JSON record (a checkpoint's ``pick_geometry``).

Shared by the configs that validate their own fields (``executor_vla.track_config.TrackExecutorConfig``,
``tandem.runtime.config.LearnedPlannerConfig``); the field annotations are read as strings, as modules with
``from __future__ import annotations`` store them.
"""

from __future__ import annotations

import dataclasses
import math
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
