"""The privileged-state guard: simulator truth reaches only components that declare ``is_oracle = True``.

Two things are the simulator's truth: ``Observation.privileged`` (below) and ``TaskSpec.goals``, the judge's reading
of the instruction. A non-oracle component gets the task through :func:`task_for`, whose goals raise on any read
(:class:`WithheldGoals`): it plans from the instruction's words and the task's vocabulary.

``Observation.privileged`` holds the simulator's ground truth (object poses, predicate values, task success). A
planner, verifier, executor or goal producer that is not an oracle must work from the cameras and proprioception
alone, as it would on a robot. The runtime therefore hands such a component :func:`observation_for`'s view of each
observation: a shallow copy whose ``privileged`` is a :class:`RedactedPrivileged`, which raises
:class:`~tandem.core.errors.PrivilegedAccessError` naming the component on any read (indexing, ``get``, iteration,
``in``, ``len``, truth value). So a learned or VLM component cannot read the truth even by mistake, and a mistake
fails loudly instead of silently scoring as a privileged result. Observations without privileged state (a real
robot) pass unchanged.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn

from tandem.core.errors import PrivilegedAccessError
from tandem.core.types import Observation, TaskSpec


class RedactedPrivileged(Mapping[str, Any]):
    """Stands in for ``Observation.privileged`` in the observations of a non-oracle component.

    Every read raises :class:`~tandem.core.errors.PrivilegedAccessError` naming ``component``; ``repr``, copying
    and pickling do not (so logs and queues of observations still work).

    Args:
        component: who received the observation, e.g. ``"planner VLMPlanner"``.
    """

    __slots__ = ("component",)

    def __init__(self, component: str):
        self.component = component

    def _deny(self, how: str) -> NoReturn:
        raise PrivilegedAccessError(
            f"{self.component} read Observation.privileged ({how}), the simulator's truth, but it is not an oracle "
            "(is_oracle = False): it must work from the observation's images and proprio, as on a robot. If it is "
            "meant to read the simulator, declare is_oracle = True (its results are then recorded as privileged).")

    def __getitem__(self, key: str) -> Any:
        self._deny(f"[{key!r}]")

    def get(self, key: str, default: Any = None) -> Any:
        """Refused: raises :class:`~tandem.core.errors.PrivilegedAccessError` naming the component."""
        self._deny(f".get({key!r})")

    def __contains__(self, key: object) -> bool:
        self._deny(f"{key!r} in ...")

    def __iter__(self) -> Iterator[str]:
        self._deny("iteration")

    def __len__(self) -> int:
        self._deny("len()")

    def __bool__(self) -> bool:
        self._deny("truth value")

    def keys(self) -> Any:
        """Refused: raises :class:`~tandem.core.errors.PrivilegedAccessError` naming the component."""
        self._deny(".keys()")

    def items(self) -> Any:
        """Refused: raises :class:`~tandem.core.errors.PrivilegedAccessError` naming the component."""
        self._deny(".items()")

    def values(self) -> Any:
        """Refused: raises :class:`~tandem.core.errors.PrivilegedAccessError` naming the component."""
        self._deny(".values()")

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<privileged state withheld from {self.component}>"

    def __copy__(self) -> RedactedPrivileged:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> RedactedPrivileged:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (RedactedPrivileged, (self.component,))


def redact(observation: Observation, component: str) -> Observation:
    """``observation`` as a component that is not an oracle may see it: a shallow copy (images and proprio shared,
    not copied) whose ``privileged`` raises on any read naming ``component``. An observation without privileged
    state is returned as is."""
    if observation.privileged is None or isinstance(observation.privileged, RedactedPrivileged):
        return observation
    view = copy.copy(observation)
    view.privileged = RedactedPrivileged(component)  # type: ignore[assignment]
    return view


def observation_for(component: Any, observation: Observation, role: str) -> Observation:
    """What ``component`` (a planner, verifier, executor or goal producer in ``role``) may see of ``observation``:
    all of it when its ``is_oracle`` is True, else the :func:`redact`-ed view."""
    if component.is_oracle:
        return observation
    return redact(observation, f"{role} {type(component).__name__}")


class WithheldGoals(Sequence[str]):
    """Stands in for ``TaskSpec.goals`` in the task a non-oracle component is given: the goals are the judge's
    reading of the instruction, and a planner that is not an oracle must ground the instruction's words itself.

    Every read raises :class:`~tandem.core.errors.PrivilegedAccessError` naming ``component``; ``repr``, copying
    and pickling do not.

    Args:
        component: who received the task, e.g. ``"planner LearnedPlanner"``.
    """

    __slots__ = ("component",)

    def __init__(self, component: str):
        self.component = component

    def _deny(self, how: str) -> NoReturn:
        raise PrivilegedAccessError(
            f"{self.component} read TaskSpec.goals ({how}), the judge's goals, but it is not an oracle "
            "(is_oracle = False): it must ground TaskSpec.instruction over TaskSpec.vocabulary itself, as on a robot.")

    def __getitem__(self, index: Any) -> Any:
        self._deny(f"[{index!r}]")

    def __iter__(self) -> Iterator[str]:
        self._deny("iteration")

    def __len__(self) -> int:
        self._deny("len()")

    def __contains__(self, value: object) -> bool:
        self._deny(f"{value!r} in ...")

    def __bool__(self) -> bool:
        self._deny("truth value")

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<goals withheld from {self.component}>"

    def __copy__(self) -> WithheldGoals:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> WithheldGoals:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (WithheldGoals, (self.component,))


def goals_withheld(task: TaskSpec) -> bool:
    """Whether ``task`` is a view with its goals withheld (:func:`task_for`)."""
    return isinstance(task.goals, WithheldGoals)


def task_for(component: Any, task: TaskSpec, role: str) -> TaskSpec:
    """What ``component`` (in ``role``) may see of ``task``: all of it when its ``is_oracle`` is True, else a copy
    whose ``goals`` raise on any read naming the component (:class:`WithheldGoals`)."""
    if component.is_oracle:
        return task
    return withhold_goals(task, f"{role} {type(component).__name__}")


def withhold_goals(task: TaskSpec, who: str) -> TaskSpec:
    """A copy of ``task`` whose goals raise naming ``who`` on any read (``task`` itself if already withheld).

    Where the task declares a vocabulary, its ``objects`` and ``targets`` become every object and place the vocabulary
    names: a judge's spec may list only the objects its goals move (pick_place_bins), which would tell the goal."""
    if goals_withheld(task):
        return task
    vocab = task.vocabulary
    # WithheldGoals stands in for the goals tuple on purpose (every read raises): hence the two type: ignore
    if vocab is None:
        return dataclasses.replace(task, goals=WithheldGoals(who))  # type: ignore[arg-type]
    return dataclasses.replace(task, goals=WithheldGoals(who),  # type: ignore[arg-type]
                               objects=tuple(vocab.objects), targets=tuple(vocab.places))


__all__ = ["RedactedPrivileged", "WithheldGoals", "goals_withheld", "observation_for", "redact", "task_for", "withhold_goals"]
