"""One LIBERO task as tandem sees it: its BDDL problem (instruction, objects, goal) and its official init states.

A LIBERO task is named ``<suite>/<LIBERO task name>``, e.g.
``libero_10/KITCHEN_SCENE3_turn_on_the_stove_and_put_the_moka_pot_on_it``; the suites and their task lists are
LIBERO's own (``libero.libero.benchmark.libero_suite_task_map``, plain data).

Goal atoms become tandem goal predicates by writing BDDL's ``(In a b)`` as ``in(a,b)`` (LIBERO lower-cases the
predicate names): ``in``, ``on``, ``open``, ``close``, ``turnon``, ``turnoff``. The reference order of the goals
is BDDL's, with every ``close`` goal moved after the others (stable): nothing can be put into what is closed, and
KITCHEN_SCENE4's BDDL lists the closing of the drawer first.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from sim.tasks.libero.installation import INSTALL_HINT, LiberoNotInstalled, configure_libero, require_libero
from tandem.core.errors import UnknownTaskError
from tandem.core.vocabulary import parse_goal

#: The LIBERO suites tandem registers, as ``<suite>/<task>`` names.
SUITES: tuple[str, ...] = ("libero_10",)
#: BDDL predicate -> (tandem skill that achieves it, its predicate template, subgoal text template).
GOAL_SKILLS: dict[str, tuple[str, str, str]] = {
    "in": ("put_in", "in({0},{1})", "put the {0} in the {1}"),
    "on": ("put_on", "on({0},{1})", "put the {0} on the {1}"),
    "close": ("close", "close({0})", "close the {0}"),
    "open": ("open", "open({0})", "open the {0}"),
    "turnon": ("turn_on", "turnon({0})", "turn on the {0}"),
    "turnoff": ("turn_off", "turnoff({0})", "turn off the {0}"),
}
#: The grasp skill every task has.
PICK = ("pick", "grasped({0})", "pick up the {0}")
#: Predicates whose goals end the reference order (see the module doc).
LAST_PREDICATES = ("close",)


@functools.cache
def suite_task_names(suite: str) -> tuple[str, ...]:
    """The LIBERO task names of ``suite``, in LIBERO's order.

    Raises:
        LiberoNotInstalled: LIBERO is not installed. UnknownTaskError: unknown suite.
    """
    root = configure_libero()
    # the task map is plain data; importing it as a module of libero.libero.benchmark would first run that
    # package's __init__, which imports torch (and sim never does): read the file as a module of its own
    path = root / "benchmark" / "libero_suite_task_map.py"
    spec = importlib.util.spec_from_file_location("_libero_suite_task_map", path)
    if spec is None or spec.loader is None:
        raise LiberoNotInstalled(f"LIBERO's task map {path} is missing; {INSTALL_HINT}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    libero_task_map = module.libero_task_map

    if suite not in libero_task_map or suite not in SUITES:
        raise UnknownTaskError(suite, list(SUITES))
    return tuple(libero_task_map[suite])


def registered_names() -> list[str]:
    """Every ``<suite>/<task>`` name, or none where the extra is not installed."""
    try:
        return [f"{s}/{t}" for s in SUITES for t in suite_task_names(s)]
    except LiberoNotInstalled:
        return []


def words_of(name: str) -> str:
    """The words of a BDDL name: ``"akita_black_bowl_1"`` -> ``"akita black bowl"`` (instance number dropped);
    a region's: ``"basket_1_contain_region"`` -> ``"basket"``, ``"white_cabinet_1_bottom_region"`` ->
    ``"white cabinet bottom"``, ``"living_room_table_plate_right_region"`` -> ``"living room table plate right"``."""
    name = re.sub(r"_region$", "", name)
    name = re.sub(r"_(contain|cook|heating)$", "", name)
    return re.sub(r"_\d+(?=_|$)", "", name).replace("_", " ")


@dataclass(frozen=True)
class LiberoProblem:
    """The parsed BDDL problem of one LIBERO task.

    Attributes:
        name: ``<suite>/<task>``.
        bddl_path, init_states_path: LIBERO's files for it.
        instruction: LIBERO's language instruction.
        objects: BDDL object instance -> category (movable objects; e.g. ``{"moka_pot_1": "moka_pot"}``).
        fixtures: BDDL fixture instance -> category.
        goals: tandem goal predicates in the reference order (see the module doc).
        objects_of_interest: BDDL's ``:obj_of_interest``.
    """

    name: str
    bddl_path: Path
    init_states_path: Path
    instruction: str
    objects: dict[str, str]
    fixtures: dict[str, str]
    goals: tuple[str, ...]
    objects_of_interest: tuple[str, ...]

    @property
    def bddl_goal_atoms(self) -> list[list[str]]:
        """The goals as LIBERO's ``_eval_predicate`` takes them: ``[["in", "a", "b"], ...]``."""
        return [atom_of(g) for g in self.goals]


def atom_of(goal: str) -> list[str]:
    """``"in(a,b)"`` -> ``["in", "a", "b"]``, the form LIBERO's ``_eval_predicate`` takes.

    Raises:
        ConfigError: not a predicate of the form ``name(arg,...)`` (:func:`tandem.core.vocabulary.parse_goal`).
    """
    name, args = parse_goal(goal)
    return [name, *args]


def goal_of(atom: list[str]) -> str:
    """``["In", "a", "b"]`` -> ``"in(a,b)"``."""
    return f"{atom[0].lower()}({','.join(atom[1:])})"


@functools.cache
def load_problem(name: str) -> LiberoProblem:
    """The :class:`LiberoProblem` of ``<suite>/<task>``, parsed once.

    Raises:
        LiberoNotInstalled: the extra is missing. UnknownTaskError: not a registered LIBERO task (lists them).
        ConfigError: a goal predicate tandem has no skill for (names it).
    """
    from tandem.core.errors import ConfigError

    suite, _, task = name.partition("/")
    if suite not in SUITES or task not in suite_task_names(suite):
        raise UnknownTaskError(name, registered_names())
    root = require_libero()
    import libero.libero.envs.bddl_utils as bddl_utils

    bddl = root / "bddl_files" / suite / f"{task}.bddl"
    parsed = bddl_utils.robosuite_parse_problem(str(bddl))
    goals = [goal_of(a) for a in parsed["goal_state"]]
    for g in goals:
        if atom_of(g)[0] not in GOAL_SKILLS:
            raise ConfigError(f"LIBERO task {name!r}: goal {g!r} has no tandem skill (known predicates: "
                              f"{sorted(GOAL_SKILLS)})")
    ordered = [g for g in goals if atom_of(g)[0] not in LAST_PREDICATES] + \
              [g for g in goals if atom_of(g)[0] in LAST_PREDICATES]
    return LiberoProblem(
        name=name, bddl_path=bddl, init_states_path=root / "init_files" / suite / f"{task}.pruned_init",
        instruction=str(parsed["language_instruction"]).strip() if isinstance(parsed["language_instruction"], str)
        else " ".join(parsed["language_instruction"]),
        objects={inst: cat for cat, insts in parsed["objects"].items() for inst in insts},
        fixtures={inst: cat for cat, insts in parsed["fixtures"].items() for inst in insts},
        goals=tuple(ordered), objects_of_interest=tuple(parsed["obj_of_interest"]))
