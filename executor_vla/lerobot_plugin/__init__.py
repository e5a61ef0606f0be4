"""LeRobot plugin: registers tandem's executors as LeRobot policy types.

* ``tandem_diffusion``: :class:`executor_vla.policy.DiffusionExecutor` (cameras, goal image, trace; the GPU recipe);
* ``tandem_track``: :class:`executor_vla.track_policy.TrackExecutor` (proprioception + the subgoal's 3-D trace + its
  text; trains on a CPU).

Use them with LeRobot's own trainer (LeRobot 0.6.1)::

    lerobot-train --policy.type=tandem_track \\
        --policy.discover_packages_path=executor_vla.lerobot_plugin \\
        --dataset.repo_id=tandem/dataset --dataset.root=<dataset dir> --dataset.video_backend=pyav \\
        --policy.push_to_hub=false --policy.device=cpu

``--policy.discover_packages_path`` makes LeRobot import this package, which registers
:class:`TandemDiffusionConfig` and :class:`TandemTrackConfig` with ``@PreTrainedConfig.register_subclass``. LeRobot
then finds each policy and its processors by naming convention in the sibling modules ``modeling_<type>`` and
``processor_<type>``. The written ``pretrained_model`` directory runs in tandem's loop with
``tandem-demo executor=lerobot executor.checkpoint=<dir>`` (:mod:`executor_vla.lerobot_executor`).
"""

from executor_vla.lerobot_plugin.configuration_tandem_diffusion import TandemDiffusionConfig
from executor_vla.lerobot_plugin.configuration_tandem_track import TandemTrackConfig

__all__ = ["TandemDiffusionConfig", "TandemTrackConfig"]
