"""Every registered task is composed of its four parts (sim.tasks.roles), one module per role in its own package.

Builds the task objects only (imports robosuite's model classes, never an env).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.perturbations import PERTURBATIONS, TASK_IMPLEMENTED
from sim.tasks.base import TaskDefinition, TaskParts
from sim.tasks.registry import make_task, task_names
from sim.tasks.roles import TaskExpert, TaskPerturbations, TaskPredicates, TaskScene
from sim.tasks.types import SKILL_PREDICATES
from tandem.core.errors import ConfigError

ROLES = {"scene": TaskScene, "predicates": TaskPredicates, "expert": TaskExpert, "perturbations": TaskPerturbations}


def package_of(name: str) -> str:
    """The package a task's parts live in: ``sim.tasks.<name>``, or its family's (``libero_10/...`` ->
    ``sim.tasks.libero``)."""
    return "sim.tasks.libero" if name.startswith("libero_10/") else f"sim.tasks.{name}"


def test_the_shipped_tasks_are_registered():
    assert {"nut_assembly", "pick_place_bins", "stack_three"} <= set(task_names())


@pytest.mark.parametrize("name", task_names())
def test_each_part_implements_its_role_in_its_own_module(name):
    task = make_task(name)
    assert isinstance(task, TaskDefinition) and type(task).__module__ == package_of(name)
    for role, cls in ROLES.items():
        part = getattr(task.parts, role)
        assert isinstance(part, cls), (name, role, type(part))
        assert type(part).__module__ == f"{package_of(name)}.{role}", (name, role, type(part).__module__)
        assert not getattr(type(part), "__abstractmethods__", None), (name, role)


@pytest.mark.parametrize("name", task_names())
def test_the_task_answers_through_its_parts(name):
    task = make_task(name)
    scene, preds, perturbations = task.parts.scene, task.parts.predicates, task.parts.perturbations
    assert task.name == scene.name == name
    episode = task.sample_spec(np.random.default_rng(0))
    # the shared skill table, or (a task family with skills of its own, LIBERO) the task's own templates
    shared = set(SKILL_PREDICATES) if "/" not in name else set(episode.spec.skills)
    assert task.skills == scene.skills and set(task.skills) <= shared
    assert task.max_steps == scene.max_steps > 0
    assert task.label_vocabulary() == preds.label_vocabulary()
    assert task.object_symmetries() == scene.object_symmetries()
    assert episode.spec == scene.sample_spec(np.random.default_rng(0)).spec
    assert episode.spec.name == name
    assert set(task.object_names(episode)) <= set(task.label_vocabulary()[0])
    assert task.perturbation_names == perturbations.perturbation_names
    assert set(task.perturbation_names) <= set(PERTURBATIONS)


@pytest.mark.parametrize("name", task_names())
def test_a_task_that_lists_its_own_perturbation_implements_it(name):
    """The perturbations the Perturber hands to the task (TASK_IMPLEMENTED) need the part's own ``perturb``."""
    part = make_task(name).parts.perturbations
    own = set(part.perturbation_names) & set(TASK_IMPLEMENTED)
    overridden = type(part).perturb is not TaskPerturbations.perturb
    assert overridden == bool(own), (name, own)


def test_a_missing_or_wrong_part_is_refused_with_its_role_named():
    parts = make_task("stack_three").parts
    with pytest.raises(ConfigError, match=r"'expert' must be a TaskExpert.*got StackThreePredicates"):
        TaskParts(scene=parts.scene, predicates=parts.predicates, expert=parts.predicates,
                  perturbations=parts.perturbations)
    with pytest.raises(ConfigError, match=r"'perturbations' must be a TaskPerturbations.*got NoneType"):
        TaskDefinition(parts.scene, parts.predicates, parts.expert, None)
