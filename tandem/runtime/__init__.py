"""tandem's runtime layer, above the components: the agent loop, the rollout, the ONE builder registry
(:mod:`tandem.runtime.registry`) and demonstration collection. It may import every component package
(``sim``, ``memory``, ``planner_vlm``, ``executor_vla``, ``bridge``) and :mod:`tandem.core`; nothing imports it
but :mod:`tandem.evaluation` and :mod:`tandem.cli`.
"""
