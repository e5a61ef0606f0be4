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


def task_names() -> list[str]:
    """Names of all registered tasks."""
    return sorted(_TASKS)


def make_task(name: str) -> TaskDefinition:
    """Instantiate the TaskDefinition registered as ``name``.

    Raises:
        UnknownTaskError: if ``name`` is not registered (the message lists the known tasks).
    """
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

    if name not in _TASKS:
        raise UnknownTaskError(name, task_names())
    return vocabulary_from_file(Path(__file__).parent / name / VOCABULARY_FILE)
