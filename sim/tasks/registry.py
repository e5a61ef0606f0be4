"""Registry of long-horizon tasks (name -> TaskDefinition class) and of their pick-geometry kinds (kind -> the
:class:`tandem.core.pick_geometry.PickGeometry` implementation beside its task), both imported lazily.

The learned planner may not import ``sim``: the runtime hands it :func:`read_pick_geometry`, with which it reads the
pick geometry its trace checkpoint records (the design: :mod:`tandem.core.pick_geometry`). Adding a kind: its file
beside its task and one line in :data:`_PICK_GEOMETRY_KINDS`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from sim.tasks.base import TaskDefinition
from tandem.core.errors import ConfigError, UnknownNameError, UnknownTaskError
from tandem.core.pick_geometry import PickGeometry
from tandem.core.point_geometry import PointGeometry
from tandem.core.vocabulary import TaskVocabulary

#: task name -> "module:ClassName"
_TASKS: dict[str, str] = {
    "stack_three": "sim.tasks.stack_three:StackThreeTask",
    "pick_place_bins": "sim.tasks.pick_place_bins:PickPlaceBinsTask",
    "nut_assembly": "sim.tasks.nut_assembly:NutAssemblyTask",
}

#: pick-geometry kind -> "module:ClassName" of its implementation (a class with ``from_dict``, whose instances are
#: :class:`~tandem.core.pick_geometry.PickGeometry`), beside its task.
_PICK_GEOMETRY_KINDS: dict[str, str] = {
    "nut_pegs": "sim.tasks.nut_assembly.pick_geometry:NutPickGeometry",
    "bin_objects": "sim.tasks.pick_place_bins.pick_geometry:BinPickGeometry",
}

#: task name -> "module:ClassName" of its :class:`~tandem.core.point_geometry.PointGeometry` (the skill waypoints
#: over pointed objects that ``planner=vlm planner.geometry=pointing`` plans with), beside its task.
_POINT_GEOMETRIES: dict[str, str] = {
    "stack_three": "sim.tasks.stack_three.waypoint_geometry:StackPointGeometry",
}


def point_geometry(task: str) -> PointGeometry:
    """The pointing mode's skill geometry of ``task`` (the waypoint geometry its expert plans with).

    Raises:
        ConfigError: ``task`` has none (names the tasks that have one).
    """
    if task not in _POINT_GEOMETRIES:
        raise ConfigError(f"planner.geometry=pointing: task {task!r} has no pointing geometry yet (tasks with one: "
                          f"{', '.join(sorted(_POINT_GEOMETRIES))}); use planner.geometry=learned")
    module, cls = _POINT_GEOMETRIES[task].split(":")
    return getattr(importlib.import_module(module), cls)()


#: Prefixes of task families registered by name pattern: ``<prefix>/<name>`` -> "module:ClassName(name)", and the
#: function listing the family's names (empty where its optional extra is not installed).
_FAMILIES: dict[str, tuple[str, str]] = {
    "libero_10": ("sim.tasks.libero:LiberoTask", "sim.tasks.libero.problem:registered_names"),
}


def _family(name: str) -> tuple[str, str] | None:
    return _FAMILIES.get(name.partition("/")[0]) if "/" in name else None


def _family_names() -> list[str]:
    out: list[str] = []
    for _, lister in dict.fromkeys(_FAMILIES.values()):
        module, fn = lister.split(":")
        out.extend(getattr(importlib.import_module(module), fn)())
    return out


def task_names() -> list[str]:
    """Names of all registered tasks: tandem's own, then every task of an installed family (``libero_10/...``)."""
    return sorted(_TASKS) + _family_names()


def make_task(name: str) -> TaskDefinition:
    """Instantiate the TaskDefinition registered as ``name``.

    Raises:
        UnknownTaskError: if ``name`` is not registered (the message lists the known tasks).
    """
    family = _family(name)
    if family is not None:
        module, cls = family[0].split(":")
        return getattr(importlib.import_module(module), cls)(name)
    if name not in _TASKS:
        raise UnknownTaskError(name, task_names())
    module, cls = _TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def task_vocabulary(name: str) -> TaskVocabulary:
    """The declared vocabulary of task ``name`` (``sim/tasks/<name>/vocabulary.yaml``), read without building the
    simulator.

    Raises:
        UnknownTaskError: ``name`` is not registered. ConfigError: the file is not a valid vocabulary.
    """
    from sim.tasks.roles import VOCABULARY_FILE, vocabulary_from_file

    if _family(name) is not None:
        return make_task(name).vocabulary
    if name not in _TASKS:
        raise UnknownTaskError(name, task_names())
    return vocabulary_from_file(Path(__file__).parent / name / VOCABULARY_FILE)


def pick_geometry_kinds() -> list[str]:
    """Names of all registered pick-geometry kinds."""
    return sorted(_PICK_GEOMETRY_KINDS)


def read_pick_geometry(d: Any) -> PickGeometry:
    """The pick geometry a trace checkpoint records (``TraceModelConfig.pick_geometry``, from
    ``TaskDefinition.pick_geometry()``), read by its kind's implementation: a
    :data:`tandem.core.pick_geometry.PickGeometryReader`.

    Args:
        d: a dict naming its ``kind``, or a record made before kinds were named (:func:`_kind_of_unnamed`).

    Raises:
        UnknownNameError (a ConfigError): an unknown kind, naming it and the known ones. ConfigError: not a mapping, a
            kind that is not a string, a record without a kind that the old rule cannot place, or a malformed field
            of its kind (each named).
    """
    if not isinstance(d, dict):
        raise ConfigError(f"pick_geometry must be a mapping naming its kind, got {type(d).__name__}")
    kind = d["kind"] if "kind" in d else _kind_of_unnamed(d)
    if not isinstance(kind, str):
        raise ConfigError(f"pick_geometry kind must be a string, got {kind!r}")
    if kind not in _PICK_GEOMETRY_KINDS:
        raise UnknownNameError("pick_geometry kind", kind, pick_geometry_kinds())
    module, cls = _PICK_GEOMETRY_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), cls).from_dict({**d, "kind": kind})


def _kind_of_unnamed(d: dict[str, Any]) -> str:
    """The kind of a record that names none. Trace checkpoints recorded before kinds were named (the shipped
    ``checkpoints/trace/nut_assembly`` and ``checkpoints/trace/pick_place_bins`` among them) held one of two kinds,
    told apart by a key: ``nuts`` (nut_assembly's, ``nut_pegs``) or ``objects`` (pick_place_bins', ``bin_objects``).
    This is the one place that old rule lives; every record made since names its kind, and a new kind is never added
    here.

    Raises:
        ConfigError: the record holds both keys or neither.
    """
    if "nuts" in d and "objects" in d:
        raise ConfigError("pick_geometry names no kind and both nuts (nut_assembly) and objects (pick_place_bins); "
                          "one kind only")
    if "nuts" in d:
        return "nut_pegs"
    if "objects" in d:
        return "bin_objects"
    raise ConfigError(f"pick_geometry must name its kind (known kinds: {', '.join(pick_geometry_kinds())}) or, recorded "
                      f"before kinds, be a mapping naming nuts (nut_assembly) or objects (pick_place_bins), got "
                      f"{sorted(d, key=str)}")
