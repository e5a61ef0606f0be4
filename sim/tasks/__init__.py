"""Long-horizon tasks: ``registry.make_task(name)`` -> ``base.TaskDefinition`` (imported lazily).

How to add a task: four small files (the full guide, with a skeleton, is ``docs/tasks.md``)
------------------------------------------------------------------------------------------------
Each task is a package ``sim/tasks/<task>/`` with one file per role of :mod:`sim.tasks.roles`, and an
``__init__.py`` that only composes them into a :class:`~sim.tasks.base.TaskDefinition`::

    sim/tasks/<task>/
        pick_geometry.py  optional: the expert's pick as geometry over poses, a kind of
                          tandem.core.pick_geometry.PickGeometry (the scene's pick_geometry() records it, the
                          expert plans with it); register its kind in registry._PICK_GEOMETRY_KINDS
        scene.py          TaskScene: name, skills, max_steps; make_robosuite_env (env, placement);
                          sample_spec (per-seed instruction, goals, subgoal wording); object_names,
                          object_poses (privileged), optionally object_symmetries / mujoco_object
        predicates.py     TaskPredicates: predicates (from sim state; placing ones need release + rest),
                          label_vocabulary
        expert.py         TaskExpert: expert_waypoints per skill (grasp planning), goal_poses
        perturbations.py  TaskPerturbations: perturbation_names, and perturb for the task's own ones
        __init__.py       class <Task>Task(TaskDefinition): builds the four parts and passes them on

A part may use the parts listed above it (the predicates read the scene's poses, the expert asks whether an
object is grasped), handed to it in its constructor; never one listed below it. Then register the task in
``registry._TASKS`` (``"<task>": "sim.tasks.<task>:<Task>Task"``) and add ``configs/task/<task>.yaml``;
``tests/unit/test_task_parts.py`` checks the composition of every registered task.

Modules: :mod:`.types` (``Waypoint``, ``TaskEpisode``, ``SKILL_PREDICATES``), :mod:`.roles` (the four role
classes), :mod:`.base` (``TaskDefinition``, the composition; re-exports the types), :mod:`.registry` (tasks and
pick-geometry kinds).
"""
