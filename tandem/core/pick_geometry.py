"""A task's expert pick geometry as the learned planner uses it: the protocol every kind implements, and the signature
of the reader that turns a recorded one back into an implementation. No kind is named here.

A task whose scripted expert plans its pick by geometry over an object's pose records that geometry's static facts
(never a pose) in a trace checkpoint at training (``TraceModelConfig.pick_geometry``, from
``TaskDefinition.pick_geometry()``), as a JSON dict naming its **kind** (``{"kind": "nut_pegs", ...}``). With
``geometric_picks`` the learned planner then plans such a pick by the same geometry over the object as its state model
reads it, instead of asking the trace model.

Where each piece lives, so that every layer rule holds (``planner_vlm`` may not import ``sim``; task knowledge lives
with its task, behind a registry keyed by kind, never as a union in ``tandem.core``):

* here, in the floor: :class:`PickGeometry` (what the planner calls), :data:`PickGeometryReader` (how it gets one)
  and :func:`checked_read` (the input checks every kind makes);
* beside its task, ``sim/tasks/<task>/pick_geometry.py``: each kind's implementation (its static facts, their
  ``to_dict``/``from_dict``, the expert's plan and waypoints over a pose, and the same plan over a read), which that
  task's scene and expert use directly;
* ``sim/tasks/registry.py``: the table of kinds (kind -> implementation) and
  :func:`sim.tasks.registry.read_pick_geometry`, the reader, which also maps the records made before kinds were named;
* the runtime, which may import both, hands that reader to the learned planner as it builds it
  (``pick_geometry_reader``); the planner reads its own checkpoint's record with it and knows only this protocol.
  The runtime reads no checkpoint itself.

Adding a kind (e.g. a LIBERO family's): one file beside its task with a class implementing :class:`PickGeometry`
(and ``from_dict``), and one line in the registry's table.

Conventions: positions in m, world frame, z up; yaws in rad about world +z from world +x (a gripper's: its finger
axis, pointing down); keypoints as :func:`tandem.core.dataset_schema.object_keypoints` (an object's origin, then a
point along its local x axis). numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.waypoints import Waypoint

#: A pick planned over a read: ``(waypoints, memory-event fields)`` (the fields: ``grasp`` ``[x, y, z]`` m and
#: ``grasp_yaw`` rad at least), or the reason the geometry does not apply to this read (one line).
PickOverRead = tuple[list[Waypoint], dict[str, Any]] | str


class PickGeometry(Protocol):
    """One kind of expert pick geometry, with its static facts (see the module docstring)."""

    #: The kind's name, as recorded in ``to_dict()["kind"]`` and keyed in the registry.
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict naming :attr:`kind`; the kind's ``from_dict`` reads it back."""
        ...

    def object_names(self) -> tuple[str, ...]:
        """The objects whose pick this geometry plans."""
        ...

    def pick_over_read(self, target: str, objects: Sequence[str], keypoints_3d: np.ndarray, found: np.ndarray,
                       eef: np.ndarray, eef_yaw: float, wrist: float) -> PickOverRead:
        """The expert's pick of ``target`` over a read of the scene.

        Args:
            target: an object of :meth:`object_names` and of ``objects``.
            objects: the read's object names (O). keypoints_3d: ``(O, 2, 3)`` m, world: each object's origin and a
                point along its local x axis. found: ``bool (O,)`` the objects the read finds (obstacles).
            eef: ``(3,)`` the grip site now (m, world). eef_yaw: its finger yaw now (rad). wrist: Panda joint 7 now
                (rad).

        Returns:
            :data:`PickOverRead`.

        Raises:
            UnknownNameError: ``target`` is not in ``objects``. ConfigError: ``target`` is not in
                :meth:`object_names`, or ``found`` or ``keypoints_3d`` do not have one entry per object.
        """
        ...


#: Reads a recorded pick geometry (a dict naming its kind, or a record older than kinds) into its kind's
#: implementation. Raises ConfigError: an unknown kind (naming it and the known ones) or a malformed field.
PickGeometryReader = Callable[[Any], PickGeometry]


def fields_of_kind(d: Any, kind: str) -> Any:
    """A recorded geometry's fields for its kind's ``from_dict``: ``d`` without its ``kind`` where ``d`` is a mapping
    (which names no kind or ``kind``), else ``d`` itself, for ``from_dict`` to refuse as not a mapping.

    Raises:
        ConfigError: ``d`` names another kind.
    """
    if not isinstance(d, dict):
        return d
    if d.get("kind", kind) != kind:
        raise ConfigError(f"pick_geometry of kind {d['kind']!r} is not a {kind} geometry")
    return {k: v for k, v in d.items() if k != "kind"}


def checked_read(geometry: PickGeometry, target: str, objects: Sequence[str], keypoints_3d: np.ndarray,
                 found: np.ndarray, eef: np.ndarray, eef_yaw: float,
                 wrist: float) -> tuple[int, np.ndarray, np.ndarray] | str:
    """The checks every :meth:`PickGeometry.pick_over_read` makes first.

    Returns:
        ``(target's index, its keypoints float64 (2, 3) m, found bool (O,))``, or ``"a non-finite read or proprio"``.

    Raises:
        As :meth:`PickGeometry.pick_over_read`.
    """
    objects = list(objects)
    if target not in objects:
        raise UnknownNameError("object", target, objects)
    if target not in geometry.object_names():
        raise ConfigError(f"pick geometry {geometry.kind!r} knows {list(geometry.object_names())}, not {target!r}")
    found = np.asarray(found, bool)
    if found.shape != (len(objects),):
        raise ConfigError(f"found must hold one flag per object {objects}, got shape {found.shape}")
    keypoints_3d = np.asarray(keypoints_3d, np.float64)
    if keypoints_3d.shape != (len(objects), 2, 3):
        raise ConfigError(f"keypoints_3d must be (O, 2, 3) for objects {objects}, got shape {keypoints_3d.shape}")
    keypoints = keypoints_3d[objects.index(target)]
    if not (np.all(np.isfinite(keypoints)) and np.all(np.isfinite(eef)) and math.isfinite(eef_yaw)
            and math.isfinite(wrist)):
        return "a non-finite read or proprio"
    return objects.index(target), keypoints, found


def rounded(v: np.ndarray) -> list[float]:
    """``v`` as a list of floats rounded to 0.1 mm (a memory event's ``grasp``)."""
    return [round(float(x), 4) for x in v]
