"""tandem's runtime layer, above the components: the agent loop (:mod:`~tandem.runtime.agent`), the rollout, the
typed stack config (:mod:`~tandem.runtime.config`), the ONE builder registry (:mod:`~tandem.runtime.registry`),
demonstration collection and labelling, the bridge sessions and the process environment. It may import every
component package (``sim``, ``memory``, ``planner_vlm``, ``executor_vla``, ``bridge``) and :mod:`tandem.core`;
nothing imports it but :mod:`tandem.evaluation` and :mod:`tandem.cli`.
"""
