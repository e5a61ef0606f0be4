"""``TandemTrackPolicy``: :class:`executor_vla.track_policy.TrackExecutor` behind LeRobot's ``PreTrainedPolicy``.

Training (``lerobot-train --policy.type=tandem_track``): LeRobot's ``make_policy`` builds the policy with the
dataset's metadata (``dataset_meta``) and statistics (``dataset_stats``). From them, once:

* the feature statistics: the track features (proprio and trace relative to the gripper, 6-D rotation, yaw as
  sin/cos) are non-linear in the dataset's columns, so LeRobot's per-column statistics cannot give their
  mean/std. They are computed from the dataset itself with :class:`executor_vla.track_data.TrackDataset` (the
  loader of ``tandem-train executor=track``), over every frame, exactly as ``tandem-train`` computes them;
* the action min/max (the actions are min-max scaled to ``[-1, 1]``): LeRobot's ``dataset_stats["action"]``;
* the segment table (:class:`executor_vla.lerobot_plugin.track_batch.SegmentTable`) that cuts LeRobot's episode
  windows at subgoal-attempt bounds, and the vocabulary (``tasks``, ``objects``) if the config leaves it empty;
* the texts of ``subgoal.task_index`` (``task_index`` for the flat policy): ``dataset_meta.tasks``.

The statistics are buffers of the executor, saved in ``model.safetensors`` by ``save_pretrained``; a policy
loaded with ``from_pretrained`` needs no dataset (the weights are loaded strictly: a mismatch raises).

Batches are LeRobot's: ``index (B,)``, ``observation.state (B, To, 8)`` (grip-site position m, quaternion wxyz,
gripper opening m; world frame), ``action (B, Tp, 7)`` (OSC delta + gripper), ``action_is_pad (B, Tp)``,
``subgoal.trace_3d (B, K3, 5)``, ``subgoal.trace_3d_mask (B, K3)``, ``subgoal.task_index (B,)``,
``subgoal.progress (B,)`` (:mod:`tandem.core.dataset_schema`). In the closed loop,
:class:`executor_vla.lerobot_executor.LeRobotPolicyExecutor` drives :attr:`TandemTrackPolicy.executor` directly
(its ``set_subgoal`` / ``select_action`` / ``subgoal_done``), as for ``tandem_diffusion``.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import torch
from lerobot.policies.pretrained import PreTrainedPolicy
from torch import Tensor

from executor_vla.lerobot_plugin.batch_text import batch_texts, tasks_table
from executor_vla.lerobot_plugin.configuration_tandem_track import TandemTrackConfig
from executor_vla.lerobot_plugin.track_batch import SegmentTable, batch_features, trace_inputs, training_batch
from executor_vla.network import TEXT_EMB_KEY
from executor_vla.track_config import TrackExecutorConfig
from executor_vla.track_data import TrackDataset, TrackStats
from executor_vla.track_policy import TrackExecutor
from tandem.core import dataset_schema as schema
from tandem.core.errors import ConfigError, DatasetSchemaError


def check_dataset_features(features: dict[str, dict[str, Any]], cfg: TrackExecutorConfig) -> None:
    """Check a tandem dataset's ``info.json`` features against what the track config reads.

    Raises:
        ConfigError: a trace feature the config needs is missing, or has another length than the config's (named,
            with the ``--policy.<flag>`` to set).
    """
    if cfg.conditioning_source == "instruction":
        return
    if cfg.trace_input == "3d":
        key, flag, size = schema.TRACE_3D_KEY, "trace_3d_len", cfg.trace_3d_len
    else:
        key, flag, size = schema.TRACE_KEY, "trace_len", cfg.trace_len
    feat = features.get(key)
    if feat is None:
        raise ConfigError(f"tandem_track (trace_input={cfg.trace_input!r}) needs the dataset feature {key!r}, which "
                          "this dataset lacks: collect it with tandem-collect")
    if int(tuple(feat["shape"])[0]) != size:
        raise ConfigError(f"the dataset's {key} holds {tuple(feat['shape'])[0]} rows but the policy's {flag} is {size} "
                          f"(set --policy.{flag}={tuple(feat['shape'])[0]})")


class TandemTrackPolicy(PreTrainedPolicy):
    """LeRobot policy wrapping a :class:`TrackExecutor` (see the module docstring).

    Args:
        config: the :class:`TandemTrackConfig`.
        dataset_stats: LeRobot's per-feature statistics (``{"action": {"min", "max", ...}, ...}``), given by
            ``make_policy``; only ``action`` min/max are used.
        dataset_meta: the dataset's ``LeRobotDatasetMetadata`` (``root``, ``features``, ``tasks``), given by
            ``make_policy``. Without it the policy can predict (statistics come with the weights) but not train.

    Attributes:
        executor: the wrapped :class:`TrackExecutor` (an ``nn.Module`` child: its weights and statistics are this
            policy's).
        segments: the dataset's :class:`SegmentTable`, None without ``dataset_meta``.
        texts: ``{task index: text}`` of the dataset.

    Raises:
        ValueError: (LeRobot's convention) the dataset's state/action sizes differ from the config's.
        ConfigError: the dataset lacks the trace the config needs, or its length differs.
        DatasetSchemaError: the dataset cannot be read as a tandem dataset (see :class:`TrackDataset`).
    """

    config_class = TandemTrackConfig
    name = "tandem_track"

    def __init__(self, config: TandemTrackConfig, dataset_stats: dict[str, dict[str, Any]] | None = None,
                 dataset_meta: Any = None, **kwargs: Any):
        super().__init__(config)
        config.validate_features()
        self.config = config
        self.segments: SegmentTable | None = None
        self.texts: dict[int, str] = tasks_table(dataset_meta)
        stats: TrackStats | None = None
        if dataset_meta is not None:
            check_dataset_features(dataset_meta.features, config.executor_config())
            data = TrackDataset(dataset_meta.root, config.executor_config())
            if not config.tasks and not config.objects:  # the checkpoint's vocabulary, as tandem-train records it
                config.tasks, config.objects = tuple(data.tasks), tuple(data.objects)
            stats = data.stats()
            if dataset_stats is not None and schema.ACTION_KEY in dataset_stats:
                stats.action_min = np.asarray(dataset_stats[schema.ACTION_KEY]["min"], np.float32).reshape(-1)
                stats.action_max = np.asarray(dataset_stats[schema.ACTION_KEY]["max"], np.float32).reshape(-1)
            self.segments = SegmentTable.of(data)
        self.executor = TrackExecutor(config.executor_config(), stats=stats)
        self._history: collections.deque[Tensor] = collections.deque(maxlen=config.n_obs_steps)
        self._queue: collections.deque[Tensor] = collections.deque()

    @classmethod
    def _load_as_safetensor(cls, model: TandemTrackPolicy, model_file: str, map_location: str,
                            strict: bool) -> TandemTrackPolicy:
        """Load ``model.safetensors`` strictly, whatever ``strict`` LeRobot passes (its default, False, would leave
        missing statistics at their identity values silently).

        Raises:
            RuntimeError: missing or unexpected keys, or shapes that differ (PyTorch's message).
        """
        return super()._load_as_safetensor(model, model_file, map_location, True)

    def get_optim_params(self) -> Any:
        """All parameters (the statistics are buffers, never optimised)."""
        return self.parameters()

    def reset(self) -> None:
        """Drop the observation history and the queued actions of :meth:`select_action`."""
        self._history.clear()
        self._queue.clear()

    # ------------------------------------------------------------------ batches
    def _text(self, batch: dict[str, Any]) -> Tensor | None:
        """``(B, E)`` text embeddings: ``subgoal.text_embedding`` if given, else the encoded conditioning texts."""
        cfg = self.executor.cfg
        if not cfg.use_text:
            return None
        dev = self.executor.device
        if TEXT_EMB_KEY in batch:
            return torch.as_tensor(batch[TEXT_EMB_KEY], dtype=torch.float32, device=dev)
        key = "task_index" if cfg.conditioning_source == "instruction" else schema.SUBGOAL_TASK_INDEX_KEY
        emb = self.executor.text_encoder.encode(batch_texts(batch, key, self.texts))
        return torch.from_numpy(np.asarray(emb, np.float32)).to(dev)

    def forward(self, batch: dict[str, Any]) -> tuple[Tensor, dict[str, float]]:
        """Training loss of a LeRobot batch (see the module docstring for its keys).

        Returns:
            ``(loss, {"action_loss", "progress_loss"})`` (:meth:`TrackExecutor.compute_loss`).

        Raises:
            DatasetSchemaError: the policy was built without its dataset (no segment table), or a missing key or
                wrong shape in the batch (named).
        """
        if self.segments is None:
            raise DatasetSchemaError("this tandem_track policy was built without its dataset's metadata, so it cannot "
                                     "cut training windows: build it with make_policy(cfg, ds_meta=...)")
        track = {k: v.to(self.executor.device) for k, v in training_batch(self.executor.cfg, batch,
                                                                          self.segments).items()}
        text = self._text(batch)
        if text is not None:
            track["text"] = text
        out = self.executor.compute_loss(track)
        return out["loss"], {k: float(v.detach()) for k, v in out.items() if k != "loss"}

    def _observation_window(self, batch: dict[str, Any]) -> Tensor:
        """``(B, To, D)`` proprio: the batch's own window, or (a single frame ``(B, D)``) the history of
        :meth:`select_action` calls, padded at its start by repeating its first frame as the executor does."""
        state = torch.as_tensor(batch[schema.STATE_KEY], dtype=torch.float32)
        if state.ndim == 3:
            return state
        self._history.append(state)
        hist = list(self._history)
        return torch.stack([hist[0]] * (self.config.n_obs_steps - len(hist)) + hist, dim=1)

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Any], generator: torch.Generator | None = None,
                             **kwargs: Any) -> Tensor:
        """One chunk per batch element.

        Args:
            batch: ``observation.state`` ``(B, To, D)`` (frames of the current subgoal only: the caller pads at its
                start) or ``(B, D)`` (a history is kept, as :meth:`select_action` does), the trace keys of
                :func:`executor_vla.lerobot_plugin.track_batch.trace_inputs`, and the text as
                ``subgoal.text_embedding (B, E)``, ``subgoal.text`` (B strings) or ``subgoal.task_index``.
            generator: RNG of the initial diffusion noise.

        Returns:
            ``(B, Tp, A)`` actions in controller units (not clipped); the chunk starts at the current frame.

        Raises:
            DatasetSchemaError: a missing key or wrong shape (named).
            SubgoalSchemaError: a malformed or non-finite trace.
        """
        states = self._observation_window(batch).cpu().numpy()
        rows, mask = trace_inputs(self.executor.cfg, batch, states.shape[0])
        obs = torch.from_numpy(batch_features(self.executor.cfg, states, rows, mask)).to(self.executor.device)
        actions, _ = self.executor.predict_action_chunk(obs, self._text(batch), generator=generator)
        return actions

    @torch.no_grad()
    def select_action(self, batch: dict[str, Any], **kwargs: Any) -> Tensor:
        """``(B, A)``: the next queued action clamped to ``[-1, 1]``; refills the queue with the first
        ``n_action_steps`` actions of a new chunk. (No gripper hysteresis and no done head: for the closed loop use
        :class:`executor_vla.lerobot_executor.LeRobotPolicyExecutor`, which drives the executor itself.)"""
        if self._queue:
            if torch.as_tensor(batch[schema.STATE_KEY]).ndim == 2:
                self._history.append(torch.as_tensor(batch[schema.STATE_KEY], dtype=torch.float32))
        else:
            chunk = self.predict_action_chunk(batch)
            self._queue.extend(chunk[:, :self.config.n_action_steps].transpose(0, 1))
        return self._queue.popleft().clamp(-1.0, 1.0)
