"""MuJoCo/robosuite side of tandem (no torch).

Modules (import them directly; this package imports nothing so that ``import sim`` stays cheap):

* :mod:`sim.robosuite_env`: ``RobosuiteEnv``, the ``tandem.core.protocols.Env`` adapter.
* :mod:`sim.cameras`: intrinsics, extrinsics, ``world_to_pixel``.
* :mod:`sim.experts`: waypoint tracker and the privileged ``ScriptedExecutor``.
* :mod:`sim.goal_render`: ``OracleGoalProducer`` (teleport-render-restore goal images, projected expert traces).
* :mod:`sim.perturbations`: ``PerturbationSpec`` and mid-episode disturbances.
* :mod:`sim.tasks`: the task registry and task definitions, each a package of four parts (scene, predicates,
  expert, perturbations; how to add one: ``docs/tasks.md``).
"""
