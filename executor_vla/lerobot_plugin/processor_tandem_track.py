"""Pre/post-processors of the ``tandem_track`` LeRobot policy type.

The same pipeline as ``tandem_diffusion`` (:mod:`executor_vla.lerobot_plugin.processor_tandem_diffusion`): LeRobot's
default steps with every normalisation mode IDENTITY (the executor normalises inside itself with its own
statistics), and a batch -> transition converter that keeps the ``subgoal.*`` keys (the 3-D trace, its mask, the
subgoal's task index and progress), which LeRobot's own converter would drop. LeRobot keeps ``index`` and
``task_index`` itself.
"""

from __future__ import annotations

from typing import Any

import torch
from lerobot.processor import PolicyAction, PolicyProcessorPipeline, make_default_pre_post_processors

from executor_vla.lerobot_plugin.configuration_tandem_track import TandemTrackConfig
from executor_vla.lerobot_plugin.processor_tandem_diffusion import batch_to_transition_keep_subgoal


def make_tandem_track_pre_post_processors(
    config: TandemTrackConfig, dataset_stats: dict[str, dict[str, torch.Tensor]] | None = None,
) -> tuple[PolicyProcessorPipeline[dict[str, Any], dict[str, Any]],
           PolicyProcessorPipeline[PolicyAction, PolicyAction]]:
    """The processor pair LeRobot's factory looks up by name for policy type ``tandem_track``."""
    pre, post = make_default_pre_post_processors(config, dataset_stats)
    pre.to_transition = batch_to_transition_keep_subgoal
    return pre, post
