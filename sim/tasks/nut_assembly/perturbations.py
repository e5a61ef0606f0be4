"""``nut_assembly`` perturbations: its own ``jam_on_peg`` (a carried nut brought down off its peg's axis, so that it
rests on the peg's top), and the generic gripper ones of ``sim/perturbations.py`` (a nut dropped mid-carry, a spurious
closure before a grasp), and the surprises ``vanish``, ``appearance_shift`` and ``drop_after_grasp`` (a nut
dropped right after its grasp)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.tasks.nut_assembly.predicates import NutAssemblyPredicates
from sim.tasks.nut_assembly.scene import NUTS, PEG_TOP_Z, NutAssemblyScene
from sim.tasks.roles import TaskPerturbations
from sim.tasks.types import TaskEpisode
from tandem.core.errors import UnknownNameError, UnknownObjectError

#: ``jam_on_peg`` fires once the grasped nut's hole centre is within this xy distance (m) of its peg's axis ...
JAM_TRIGGER_XY = 0.015
#: ... and less than this height (m) above the peg's top (the expert's align height is 0.025 m above it).
JAM_TRIGGER_HEIGHT = 0.045
#: Range (m) of the xy offset from the peg's axis at which the nut is brought down; the holes' clearance is
#: 6.75 mm (square) and 11 mm (round), so at 15 mm or more the nut lands on the peg's top.
JAM_OFFSET = (0.015, 0.03)
#: Height (m) of the nut's origin over the peg's top that the push aims at (lying on the top: 0.01 m; lower presses).
JAM_PRESS_HEIGHT = 0.004


class NutAssemblyPerturbations(TaskPerturbations):
    """Perturbations of ``nut_assembly`` (see module doc).

    Args:
        scene: the task's scene (nut and peg poses, grip site).
        predicates: the task's predicates (whether a nut is grasped).
    """

    perturbation_names: tuple[str, ...] = ("jam_on_peg", "open_gripper", "close_gripper",
                                          "vanish", "appearance_shift", "drop_after_grasp")

    def __init__(self, scene: NutAssemblyScene, predicates: NutAssemblyPredicates) -> None:
        self.scene = scene
        self.preds = predicates

    def perturb(
        self, rs_env: Any, episode: TaskEpisode, name: str, rng: np.random.Generator, target: str | None = None
    ) -> dict[str, Any] | None:
        """``jam_on_peg``: once the grasped nut ``target`` is carried close above its own peg (hole centre within
        :data:`JAM_TRIGGER_XY` of the axis and :data:`JAM_TRIGGER_HEIGHT` of the top), name the grip-site point that
        brings the nut down :data:`JAM_OFFSET` off the axis (random direction), pressed onto the peg's top.

        Moves nothing itself: ``sim/perturbations.py`` drives the arm towards ``push_to`` for ``PUSH_STEPS`` steps.

        Returns:
            ``{"object", "peg", "offset_m", "direction_rad", "push_to": [x, y, z]}`` (m, rad, world; ``push_to`` is a
            grip-site position), or None to decline (the nut is not grasped, or not yet over its peg).

        Raises:
            UnknownNameError: ``name`` is not ``"jam_on_peg"``. UnknownObjectError: ``target`` is not a nut.
        """
        if name != "jam_on_peg":
            raise UnknownNameError("perturbation", name, self.perturbation_names)
        if target not in NUTS:
            raise UnknownObjectError(str(target), list(NUTS))
        if not self.preds.is_grasped(rs_env, target):
            return None
        peg = NUTS[target].peg
        nut_pos, _ = self.scene.nut_pose(rs_env, target)
        axis = self.scene.peg_pos(rs_env, peg)[:2]
        if np.linalg.norm(nut_pos[:2] - axis) > JAM_TRIGGER_XY or nut_pos[2] > PEG_TOP_Z + JAM_TRIGGER_HEIGHT:
            return None
        offset = float(rng.uniform(*JAM_OFFSET))
        direction = float(rng.uniform(-math.pi, math.pi))
        nut_to = np.array([axis[0] + offset * math.cos(direction), axis[1] + offset * math.sin(direction),
                           PEG_TOP_Z + JAM_PRESS_HEIGHT])
        site, _ = self.scene.grip_site(rs_env)
        push_to = nut_to + (site - nut_pos)
        return {"object": target, "peg": peg, "offset_m": round(offset, 4), "direction_rad": round(direction, 3),
                "push_to": push_to.round(4).tolist()}
