"""A float32 numpy snapshot of a :class:`executor_vla.track_net.ResidualMLP`: the track executor's batch-1 CPU path.

At batch 1 a 256-wide MLP is bound by per-call overhead, not arithmetic: a ``torch.addmm`` of ``(1, 256) x (256,
256)`` costs about 7 us on this CPU, ``numpy``'s BLAS product about 3.7 us, and elementwise ``numpy`` ops about
1.5 us against 2-4 us for ``torch`` (``benchmarks/executor_latency.py`` measures the whole chunk). This module holds
the weights as contiguous float32 arrays, transposed to ``(in, out)``, with each residual block's LayerNorm scale and
shift folded into the block's first linear layer (``(z * g + beta) W^T + b = z (g W^T) + (beta W^T + b)``, folded in
float64). The results equal the module's to float32 rounding (about 1e-6 relative), tested.

The snapshot follows the module: :meth:`NumpyResidualMLP.refresh` rebuilds it when any parameter changes version
(an optimiser step, ``load_state_dict``) or storage, so a model that keeps training is read with its current
weights. (A parameter replaced by a new ``nn.Parameter`` object is not seen: build a new snapshot then.)

Method: LayerNorm (Ba et al. 2016) and Mish (Misra 2019, ``x tanh(softplus(x))``) as ``torch.nn`` defines them.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor, nn

from tandem.core.errors import ConfigError


def _array(t: Tensor, dtype: type = np.float64) -> np.ndarray:
    return t.detach().cpu().numpy().astype(dtype)


def mish(a: np.ndarray) -> np.ndarray:
    """``a * tanh(log1p(exp(a)))`` elementwise, as a new array of ``a``'s shape; ``exp`` overflows to inf for
    ``a > 88`` (the result is then ``a``, as torch's): call under ``np.errstate(over="ignore")``."""
    s = np.exp(a)
    np.log1p(s, out=s)
    np.tanh(s, out=s)
    s *= a
    return s


def parameter_key(params: list[Tensor]) -> tuple[tuple[int, int], ...]:
    """``(storage pointer, version)`` of each tensor of ``params`` (a module's ``list(parameters())``, listed once:
    walking the module tree per call costs about 50 us): changes when any is updated in place (an optimiser step,
    ``load_state_dict``) or given new storage (``.data =``, ``Module.to``)."""
    return tuple((p.data_ptr(), p._version) for p in params)


class NumpyResidualMLP:
    """Float32 numpy copy of a ``ResidualMLP`` (input projection, pre-norm residual blocks ``LayerNorm -> Linear ->
    Mish -> Linear``, output ``LayerNorm -> Mish -> Linear``).

    Args:
        mlp: the module (its ``inp``, ``blocks`` and ``out``); read at :meth:`refresh`.

    Attributes (after :meth:`refresh`):
        inp_t: ``float32 (in, H)`` the input layer's weight, transposed. inp_b: ``float32 (H,)``.
        key: the :func:`parameter_key` the snapshot was read at (caches derived from it key on it).

    Raises:
        ConfigError: a module of another layout.
    """

    def __init__(self, mlp: nn.Module):
        blocks_ok = all(isinstance(b, nn.Sequential) and len(b) == 4 and isinstance(b[0], nn.LayerNorm)
                        and isinstance(b[1], nn.Linear) and isinstance(b[2], nn.Mish) and isinstance(b[3], nn.Linear)
                        for b in getattr(mlp, "blocks", [None]))
        out = getattr(mlp, "out", None)
        out_ok = (isinstance(out, nn.Sequential) and len(out) == 3 and isinstance(out[0], nn.LayerNorm)
                  and isinstance(out[1], nn.Mish) and isinstance(out[2], nn.Linear))
        if not (isinstance(getattr(mlp, "inp", None), nn.Linear) and blocks_ok and out_ok):
            raise ConfigError(f"NumpyResidualMLP copies a ResidualMLP (inp, LayerNorm/Linear/Mish/Linear blocks, "
                              f"LayerNorm/Mish/Linear out), not {type(mlp).__name__}")
        self.mlp = mlp
        self._params = list(mlp.parameters())
        self.key: tuple | None = None

    def refresh(self) -> NumpyResidualMLP:
        """Re-read the weights if any parameter changed since the last read; returns ``self``."""
        key = parameter_key(self._params)
        if key != self.key:
            self._load()
            self.key = key
        return self

    def _load(self) -> None:
        m = self.mlp
        f32 = np.float32
        self.inp_t = np.ascontiguousarray(_array(m.inp.weight, f32).T)
        self.inp_b = _array(m.inp.bias, f32)
        hidden = self.inp_b.shape[0]
        self._mean = np.full((hidden, 1), 1.0 / hidden, f32)  # a BLAS product is the cheapest row mean at batch 1
        self._blocks = []
        for norm, lin1, _, lin2 in m.blocks:
            w1_t = _array(lin1.weight).T  # (H, H) float64
            scale, shift = _array(norm.weight), _array(norm.bias)
            self._blocks.append((norm.eps, np.ascontiguousarray(scale[:, None] * w1_t, f32),
                                 (shift @ w1_t + _array(lin1.bias)).astype(f32),
                                 np.ascontiguousarray(_array(lin2.weight, f32).T), _array(lin2.bias, f32)))
        norm, _, lin = m.out
        self._out = (norm.eps, _array(norm.weight, f32), _array(norm.bias, f32),
                     np.ascontiguousarray(_array(lin.weight, f32).T), _array(lin.bias, f32))

    def _normalise(self, h: np.ndarray, eps: float) -> np.ndarray:
        """LayerNorm without its affine part, over the last axis of ``h (B, H)`` (biased variance, as torch)."""
        z = h - h @ self._mean
        var = (z * z) @ self._mean
        var += eps
        np.sqrt(var, out=var)
        z /= var
        return z

    def trunk(self, h: np.ndarray) -> np.ndarray:
        """The residual blocks and the output layer on ``h``: ``float32 (B, H)`` after the input layer (it is
        updated in place) -> ``float32 (B, out)``. Call :meth:`refresh` first, under ``np.errstate(over="ignore")``
        (:func:`mish`)."""
        for eps, w1_t, b1, w2_t, b2 in self._blocks:
            a = self._normalise(h, eps) @ w1_t
            a += b1
            y = mish(a) @ w2_t
            y += b2
            h += y
        eps, scale, shift, w_t, b = self._out
        z = self._normalise(h, eps)
        z *= scale
        z += shift
        y = mish(z) @ w_t
        y += b
        return y

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``float32 (B, in) -> (B, out)``: the whole MLP (refreshes the weights first)."""
        self.refresh()
        h = x @ self.inp_t
        h += self.inp_b
        with np.errstate(over="ignore"):
            return self.trunk(h)
