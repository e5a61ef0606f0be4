"""Role 1 of 4 for a LIBERO task: the BDDL scene, built through LIBERO's own problem classes.

Episodes and seeds (LIBERO's protocol; ``/work/shared/FIELD-NOTES.md``):

* seeds :data:`OFFICIAL_SEEDS` (1000-1049) are LIBERO's 50 official init states of the task, in order: the test
  set, on which nothing is trained;
* every other seed draws the scene with LIBERO's own placement samplers, seeded by the seed (training
  demonstrations, validation).

The instruction is LIBERO's; the goals are the BDDL goal's atoms (:mod:`sim.tasks.libero.problem`). The episode
budget is LIBERO-10's 520 control steps at 20 Hz.
"""

from __future__ import annotations

from typing import Any, override

import numpy as np

from sim.tasks.libero.init_states import official_init_states
from sim.tasks.libero.installation import require_libero
from sim.tasks.libero.problem import GOAL_SKILLS, PICK, LiberoProblem, atom_of, load_problem, words_of
from sim.tasks.libero.world import LiberoWorld
from sim.tasks.roles import TaskScene
from sim.tasks.types import TaskEpisode
from tandem.core.errors import ConfigError
from tandem.core.types import TaskSpec
from tandem.core.vocabulary import TaskVocabulary

#: The seeds that stand for LIBERO's official init states 0..49 (the test set).
OFFICIAL_SEEDS = range(1000, 1050)
#: LIBERO-10's episode cap (control steps at 20 Hz), as openpi's and LeRobot's evaluations use it.
MAX_STEPS = 520
#: Physics steps (2 ms each) that let a sampled placement push its objects out of the table before the adapter's
#: overlap check (LIBERO's samplers place meshes up to 3 cm deep).
SETTLE_PHYSICS_STEPS = 250


def settle_objects(rs_env: Any) -> None:
    """Run :data:`SETTLE_PHYSICS_STEPS` physics steps so that a sampled placement's objects come to rest (LIBERO's
    samplers drop meshes into the table by up to 3 cm), with every robot joint (arm and gripper) held at its reset
    position: without a controller the arm sags under gravity, from LIBERO's ``init_qpos`` (the pose every official
    init state starts near: grip site about 20 cm above the table's centre) to a pose 20 cm lower and 20 cm back, which
    demonstrations would then start from and the official init states never do."""
    data = rs_env.sim.data
    joints = np.concatenate([np.r_[r._ref_joint_pos_indexes, r._ref_gripper_joint_pos_indexes[arm]]
                             for r in rs_env.robots for arm in r.arms]).astype(int)
    velocities = np.concatenate([np.r_[r._ref_joint_vel_indexes, r._ref_gripper_joint_vel_indexes[arm]]
                                 for r in rs_env.robots for arm in r.arms]).astype(int)
    held = np.array(data.qpos[joints])
    for _ in range(SETTLE_PHYSICS_STEPS):
        data.qpos[joints] = held
        data.qvel[velocities] = 0.0
        rs_env.sim.step()
    data.qpos[joints] = held
    data.qvel[velocities] = 0.0
    rs_env.sim.forward()


def official_index(seed: int) -> int | None:
    """The official init state a seed stands for (0..49), or None for a seed LIBERO's placement draws."""
    return seed - OFFICIAL_SEEDS.start if seed in OFFICIAL_SEEDS else None


class LiberoScene(TaskScene):
    """The scene of one LIBERO task (see the module doc).

    Args:
        name: ``<suite>/<task>``, e.g. ``"libero_10/KITCHEN_SCENE3_turn_on_the_stove_and_put_the_moka_pot_on_it"``.

    Raises:
        LiberoNotInstalled: the extra is missing. UnknownTaskError: not a LIBERO task of a registered suite.
    """

    max_steps = MAX_STEPS
    steps_per_subgoal = 130

    def __init__(self, name: str) -> None:
        self.problem: LiberoProblem = load_problem(name)
        self.name = name
        used = [p for p in GOAL_SKILLS if p in {atom_of(g)[0] for g in self.problem.goals}]
        self.skills = (PICK[0], *(GOAL_SKILLS[p][0] for p in used))
        #: skill -> predicate template of this task's skills
        self.skill_templates: dict[str, str] = {PICK[0]: PICK[1], **{GOAL_SKILLS[p][0]: GOAL_SKILLS[p][1] for p in used}}
        #: the places the goals name (regions, fixtures; a plate is an object and a place), in goal order
        self.targets: tuple[str, ...] = tuple(dict.fromkeys(
            a for g in self.problem.goals for i, a in enumerate(atom_of(g)[1:])
            if a not in self.problem.objects or i == 1))
        self._vocabulary = TaskVocabulary(
            task=name, skills=dict(self.skill_templates), goal_skills=tuple(GOAL_SKILLS[p][0] for p in used),
            objects={o: (words_of(o),) for o in self.problem.objects},
            places={t: (words_of(t),) for t in self.targets if t not in self.problem.objects},
            skill_texts={PICK[0]: PICK[2], **{GOAL_SKILLS[p][0]: GOAL_SKILLS[p][2] for p in used}})

    # ---- the goal and its words
    def vocabulary(self) -> TaskVocabulary:
        """The task's vocabulary, declared by its BDDL file: its objects and places in their own words
        (:func:`sim.tasks.libero.problem.words_of`), its skills."""
        return self._vocabulary

    @override
    def spec_for_goals(self, goals: tuple[str, ...], instruction: str) -> TaskSpec:
        vocab = self._vocabulary
        return TaskSpec(name=self.name, instruction=instruction, objects=tuple(self.problem.objects),
                        max_steps=self.max_steps, skills=dict(self.skill_templates), goals=tuple(goals),
                        targets=self.targets, skill_texts=dict(vocab.skill_texts), vocabulary=vocab,
                        arg_words={n: words[0] for n, words in (*vocab.objects.items(), *vocab.places.items())})

    def sample_spec(self, rng: np.random.Generator) -> TaskEpisode:
        """LIBERO's own instruction and goal (the same for every seed; the scene is drawn at reset)."""
        return TaskEpisode(spec=self.spec_for_goals(self.problem.goals, self.problem.instruction),
                           choices={"instruction_from": "libero"})

    # ---- the simulator
    def make_robosuite_env(self, **env_kwargs: Any) -> Any:
        """LIBERO's problem env for the BDDL file (Panda on LIBERO's mount, robosuite 1.5's composite controller with
        an OSC_POSE arm, no initialization noise), as ``libero.libero.envs.env_wrapper.ControlEnv`` builds it."""
        require_libero()
        import libero.libero.envs.bddl_utils as bddl_utils
        import robosuite
        from libero.libero.envs import TASK_MAPPING

        controller = robosuite.load_composite_controller_config(controller=None, robot="Panda")
        for part in controller.get("body_parts", {}).values():
            part["type"] = "OSC_POSE"
        problem_name = bddl_utils.get_problem_info(str(self.problem.bddl_path))["problem_name"]
        return TASK_MAPPING[problem_name](str(self.problem.bddl_path), robots=["Panda"],
                                          controller_configs=controller, initialization_noise=None,
                                          camera_names=["agentview", "robot0_eye_in_hand"], **env_kwargs)

    def configure_episode(self, rs_env: Any, episode: TaskEpisode) -> None:
        """Seed numpy's global generator from ``rs_env.rng`` (which the adapter has just set from the seed, with every
        placement sampler, :func:`sim.robosuite_env.seed_placement`): LIBERO's regions draw their rotations from
        ``np.random``. Without it a seed drew a different scene in every process."""
        np.random.seed(int(rs_env.rng.integers(2**31)))

    def after_reset(self, rs_env: Any, episode: TaskEpisode, seed: int) -> bool:
        """Load official init state ``seed - 1000`` for a seed of :data:`OFFICIAL_SEEDS` (recorded in
        ``episode.choices["init_state"]``; a fixed state, True); any other seed keeps LIBERO's placement, drawn at
        reset (False).

        Raises:
            ConfigError: the init state does not fit this model (names the task and sizes).
        """
        k = official_index(seed)
        episode.choices["init_state"] = "sampled" if k is None else k
        if k is None:
            settle_objects(rs_env)
            return False
        states = official_init_states(self.problem.init_states_path)
        state = states[k]
        expected = rs_env.sim.get_state().flatten().shape[0]
        if state.shape[0] != expected:
            raise ConfigError(f"LIBERO task {self.name!r}: init state {k} has {state.shape[0]} numbers, the model "
                              f"{expected}")
        rs_env.sim.set_state_from_flattened(state)
        rs_env.sim.forward()
        return True

    @override
    def object_names(self, episode: TaskEpisode) -> tuple[str, ...]:
        return tuple(self.problem.objects)

    @override
    def object_poses(self, rs_env: Any, episode: TaskEpisode) -> dict[str, dict[str, list[float]]]:
        world = LiberoWorld(rs_env)
        out: dict[str, dict[str, list[float]]] = {}
        for name in (*self.problem.objects, *(t for t in self.targets if t not in self.problem.objects)):
            pos, quat = world.pose(name)
            out[name] = {"pos": pos.tolist(), "quat": quat.tolist()}
        return out

    @override
    def mujoco_object(self, rs_env: Any, episode: TaskEpisode, name: str) -> Any:
        from tandem.core.errors import UnknownObjectError

        if name not in rs_env.objects_dict:
            raise UnknownObjectError(name, list(rs_env.objects_dict))
        return rs_env.objects_dict[name]
