"""Registry of long-horizon tasks: name -> TaskDefinition class, imported lazily."""

from __future__ import annotations

import importlib
from pathlib import Path

from sim.tasks.base import TaskDefinition
from tandem.core.errors import UnknownTaskError
from tandem.core.vocabulary import TaskVocabulary

#: task name -> "module:ClassName"
_TASKS: dict[str, str] = {
    "stack_three": "sim.tasks.stack_three:StackThreeTask",
    "pick_place_bins": "sim.tasks.pick_place_bins:PickPlaceBinsTask",
    "nut_assembly": "sim.tasks.nut_assembly:NutAssemblyTask",
}


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
