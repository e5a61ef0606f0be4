"""``TandemDiffusionPolicy``: :class:`executor_vla.policy.DiffusionExecutor` behind LeRobot's ``PreTrainedPolicy``.

Batches are LeRobot's (``observation.images.<cam>`` ``(B, To, 3, H, W)`` in ``[0, 1]``,
``observation.state`` ``(B, To, 8)``, ``action`` ``(B, Tp, 7)``, ``action_is_pad``, and the tandem
``subgoal.*`` keys, see :mod:`tandem.core.dataset_schema`). The subgoal text is resolved from
``subgoal.task_index`` through the dataset's tasks table (given by LeRobot's ``make_policy`` as
``dataset_meta``) and embedded once per text; at inference a batch may instead carry
``subgoal.text_embedding`` ``(B, E)`` or ``subgoal.text`` (list of B strings).
"""

from __future__ import annotations

import collections
from typing import override

import numpy as np
import torch
from lerobot.policies.pretrained import PreTrainedPolicy
from torch import Tensor

from executor_vla.lerobot_plugin.batch_text import batch_texts, tasks_table
from executor_vla.lerobot_plugin.configuration_tandem_diffusion import TandemDiffusionConfig
from executor_vla.network import TEXT_EMB_KEY
from executor_vla.policy import DiffusionExecutor
from tandem.core import dataset_schema as schema


class TandemDiffusionPolicy(PreTrainedPolicy):
    """LeRobot policy wrapper; ``forward`` returns ``(loss, {"diffusion_loss", ...})``."""

    config_class = TandemDiffusionConfig
    name = "tandem_diffusion"

    def __init__(self, config: TandemDiffusionConfig, dataset_stats=None, dataset_meta=None, **kwargs):
        super().__init__(config)
        config.validate_features()
        self.config = config
        self.executor = DiffusionExecutor(config.executor_config())
        if dataset_stats is not None:
            self.executor.set_stats({k: {"min": np.asarray(dataset_stats[k]["min"]), "max": np.asarray(dataset_stats[k]["max"])}
                                     for k in ("action", "observation.state")})
        self.texts: dict[int, str] = tasks_table(dataset_meta)
        self._queue: collections.deque[Tensor] = collections.deque()

    @override
    def get_optim_params(self) -> dict:
        return self.parameters()

    @override
    def reset(self) -> None:
        self._queue.clear()

    def _with_text(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        ex = self.executor
        if not ex.cfg.use_text or TEXT_EMB_KEY in batch:
            return batch
        key = "task_index" if ex.cfg.conditioning_source == "instruction" else schema.SUBGOAL_TASK_INDEX_KEY
        texts = batch_texts(batch, key, self.texts)
        emb = ex.text_encoder.encode(texts)
        dev = batch[schema.STATE_KEY].device
        return {**batch, TEXT_EMB_KEY: torch.from_numpy(np.asarray(emb, np.float32)).to(dev)}

    def _to_device(self, batch: dict) -> dict:
        dev = self.executor.device
        return {k: v.to(dev) if isinstance(v, Tensor) else v for k, v in batch.items()}

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict]:
        """Training loss of a LeRobot batch: ``(loss, {name: float})`` with the executor's loss terms."""
        batch = self._with_text(self._to_device(batch))
        out = self.executor.compute_loss(batch)
        return out["loss"], {k: float(v.detach()) for k, v in out.items() if k != "loss"}

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Tensor], **kwargs) -> Tensor:
        """``(B, Tp, A)`` actions in controller units."""
        return self.executor.predict_action_chunk(self._with_text(self._to_device(batch)))

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor], **kwargs) -> Tensor:
        """``(B, A)``: the next queued action; refills the queue with ``n_action_steps`` actions of a new chunk."""
        if not self._queue:
            chunk = self.predict_action_chunk(batch)
            start = self.config.n_obs_steps - 1
            self._queue.extend(chunk[:, start:start + self.config.n_action_steps].transpose(0, 1))
        return self._queue.popleft().clamp(-1.0, 1.0)
