"""The scripted skills shared by every LIBERO task: skill name -> waypoint planner, one implementation each.

A skill planner is ``plan(world: LiberoWorld, args: tuple[str, ...]) -> list[Waypoint]``: the grip-site targets of
the waypoint tracker (``sim/experts.py``) that perform ``skill(*args)`` from the current state. Adding a skill is
one module here and one line in :data:`SKILLS`.

Modules are imported when a skill is first planned (:func:`skill_planner`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from sim.tasks.libero.world import LiberoWorld
from sim.tasks.types import Waypoint
from tandem.core.errors import UnknownSkillError

#: skill -> "module:function" (a planner, see the module doc).
SKILLS: dict[str, str] = {
    "pick": "sim.tasks.libero.skills.pick:plan_pick",
    "put_in": "sim.tasks.libero.skills.place:plan_put_in",
    "put_on": "sim.tasks.libero.skills.place:plan_put_on",
    "close": "sim.tasks.libero.skills.articulate:plan_close",
    "turn_on": "sim.tasks.libero.skills.articulate:plan_turn_on",
    "turn_off": "sim.tasks.libero.skills.articulate:plan_turn_off",
}

SkillPlanner = Callable[[LiberoWorld, tuple[str, ...]], list[Waypoint]]


def skill_planner(skill: str) -> SkillPlanner:
    """The planner of ``skill``.

    Raises:
        UnknownSkillError: no LIBERO skill of that name (lists them).
    """
    if skill not in SKILLS:
        raise UnknownSkillError(skill, list(SKILLS))
    module, fn = SKILLS[skill].split(":")
    return getattr(importlib.import_module(module), fn)
