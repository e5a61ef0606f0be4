"""tandem's floor: the contracts every layer above shares. numpy only; imports nothing else from the project.

* :mod:`tandem.core.types`: the data that flows between parts (Observation, Subgoal, Plan, Verdict, ...);
* :mod:`tandem.core.protocols`: the interfaces (Env, Planner, Verifier, Executor, GoalProducer, TaskMemory);
* :mod:`tandem.core.errors`: the error hierarchy;
* :mod:`tandem.core.privileged`: the guard that keeps simulator truth from non-oracle components;
* :mod:`tandem.core.geometry`: rotations (wxyz quaternions, yaw) and angle wrapping;
* :mod:`tandem.core.traces`: keypoint-trace resampling, shared by dataset labelling and inference;
* :mod:`tandem.core.dataset_schema`: the dataset layout (keys, fps, features) shared by writer and readers;
* :mod:`tandem.core.pick_geometry`: the protocol of a task's expert pick geometry (the kinds live with their tasks).
"""
