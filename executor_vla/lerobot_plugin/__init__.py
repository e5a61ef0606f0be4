"""LeRobot plugin: registers tandem's conditioned diffusion executor as LeRobot policy type ``tandem_diffusion``.

Use it with LeRobot's own trainer (LeRobot 0.6.1)::

    lerobot-train --policy.type=tandem_diffusion \\
        --policy.discover_packages_path=executor_vla.lerobot_plugin \\
        --dataset.repo_id=tandem/dataset --dataset.root=<dataset dir> --dataset.video_backend=pyav \\
        --policy.push_to_hub=false --policy.device=cpu

``--policy.discover_packages_path`` makes LeRobot import this package, which registers
:class:`TandemDiffusionConfig` with ``@PreTrainedConfig.register_subclass``. LeRobot then finds the
policy and its processors by naming convention in the sibling modules ``modeling_tandem_diffusion``
and ``processor_tandem_diffusion``.
"""

from executor_vla.lerobot_plugin.configuration_tandem_diffusion import TandemDiffusionConfig

__all__ = ["TandemDiffusionConfig"]
