"""Pre/post-processors of the ``tandem_diffusion`` LeRobot policy type.

LeRobot's default pipeline (rename -> batch dim -> device -> normalise; unnormalise -> cpu) with every
normalisation mode IDENTITY: the model min-max normalises inside itself, with its own statistics.

LeRobot's batch -> transition converter keeps only observation/action keys and a fixed list of
metadata keys, which would drop the tandem conditioning (``subgoal.*``, ``task.success``). The
pre-processor therefore uses :func:`batch_to_transition_keep_subgoal`, which carries those keys in the
transition's complementary data; LeRobot's ``transition_to_batch`` puts them back into the batch.
"""

from __future__ import annotations

from typing import Any

import torch
from lerobot.lerobot_types import TransitionKey
from lerobot.processor import PolicyAction, PolicyProcessorPipeline, make_default_pre_post_processors
from lerobot.processor.converters import batch_to_transition

from executor_vla.lerobot_plugin.configuration_tandem_diffusion import TandemDiffusionConfig

#: Batch keys (prefixes) the tandem policy needs beyond LeRobot's observation/action keys.
EXTRA_PREFIXES: tuple[str, ...] = ("subgoal.", "task.success")


def batch_to_transition_keep_subgoal(batch: dict[str, Any]):
    """``batch_to_transition`` that also keeps the ``subgoal.*`` and ``task.success`` keys."""
    transition = batch_to_transition(batch)
    extra = {k: v for k, v in batch.items() if k.startswith(EXTRA_PREFIXES)}
    if extra:
        comp = dict(transition.get(TransitionKey.COMPLEMENTARY_DATA) or {})
        comp.update(extra)
        transition[TransitionKey.COMPLEMENTARY_DATA] = comp
    return transition


def make_tandem_diffusion_pre_post_processors(
    config: TandemDiffusionConfig, dataset_stats: dict[str, dict[str, torch.Tensor]] | None = None,
) -> tuple[PolicyProcessorPipeline[dict[str, Any], dict[str, Any]], PolicyProcessorPipeline[PolicyAction, PolicyAction]]:
    """The processor pair LeRobot's factory looks up by name for policy type ``tandem_diffusion``."""
    pre, post = make_default_pre_post_processors(config, dataset_stats)
    pre.to_transition = batch_to_transition_keep_subgoal
    return pre, post
