"""Float32 numpy path of the track executor's condition encoder and progress head, for batch-1 CPU inference.

:meth:`executor_vla.track_net.TrackNet.encode` runs ``encoder(cat[obs, text_proj(text)])``. The encoder's input
layer splits into ``W_o obs + (W_t text_proj(text) + b)``, and the second term depends only on the subgoal's text
embedding, so it is computed once per subgoal (cached while the same text tensor and the same weights are given)
instead of once per chunk. The rest runs on :class:`executor_vla.numpy_mlp.NumpyResidualMLP`. Equal to the module
path to float32 rounding (tested); the executor uses it with the fused DDIM loop
(:meth:`executor_vla.track_policy.TrackExecutor.optimize_for_inference`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from executor_vla.numpy_mlp import NumpyResidualMLP, parameter_key
from executor_vla.track_net import TrackNet


class NumpyTrackEncoder:
    """``encode(obs (B, To * F) normalised float32, text (B, E) or None) -> cond float32 (B, cond_dim)`` and
    ``progress(cond) -> float32 (B,)`` in ``[0, 1]``, as :class:`TrackNet` computes them.

    Args:
        net: the network (its ``encoder``, ``text_proj`` and ``progress_head`` are read, and re-read when their
            parameters change version).
    """

    def __init__(self, net: TrackNet):
        self.net = net
        self._mlp = NumpyResidualMLP(net.encoder)
        self._proj_params = list(net.text_proj.parameters()) if net.text_proj is not None else []
        self._text: Tensor | None = None  # held, so that its id is not reused while it keys the cache
        self._text_key: tuple = ()
        self._text_term: np.ndarray | None = None

    def _constant_term(self, text: Tensor | None, n_obs: int) -> np.ndarray:
        """``float32 (B or 1, H)``: the input layer's bias plus the text's term (cached per text and weights)."""
        mlp, proj = self._mlp, self.net.text_proj
        if proj is None:
            return mlp.inp_b
        if text is None:
            raise ValueError("TrackNet.encode: the config uses text but no text embedding was given")
        key = (id(text), text._version, mlp.key, parameter_key(self._proj_params))
        if self._text_term is None or key != self._text_key:
            with torch.no_grad():
                projected = proj(text).detach().cpu().numpy().astype(np.float32)
            self._text_term = projected @ mlp.inp_t[n_obs:] + mlp.inp_b
            self._text, self._text_key = text, key
        return self._text_term

    def encode(self, obs: np.ndarray, text: Tensor | None) -> np.ndarray:
        """``float32 (B, To * F)`` normalised features (and the ``(B, E)`` text embedding) -> ``(B, cond_dim)``.

        Raises:
            ValueError: the config uses text and ``text`` is None.
        """
        mlp = self._mlp.refresh()
        n_obs = obs.shape[1]
        h = obs @ mlp.inp_t[:n_obs]
        h += self._constant_term(text, n_obs)
        with np.errstate(over="ignore"):
            return mlp.trunk(h)

    def progress(self, cond: np.ndarray) -> np.ndarray:
        """``float32 (B,)``: ``sigmoid(progress_head(cond))``."""
        head = self.net.progress_head
        z = cond @ head.weight.detach().numpy().T + head.bias.detach().numpy()
        with np.errstate(over="ignore"):
            return (1.0 / (1.0 + np.exp(-z))).reshape(-1)
