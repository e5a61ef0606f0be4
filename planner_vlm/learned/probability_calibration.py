"""Probability calibration of binary predictions: temperature scaling, reliability bins, expected calibration error.

Temperature scaling (Guo et al., ICML 2017, "On Calibration of Modern Neural Networks"): one scalar ``T > 0``
divides every logit, ``p = sigmoid(logit / T)``; ``T`` minimises the negative log-likelihood of held-out labels. It
changes confidences, never decisions (the sign of a logit is kept). The reliability diagram (DeGroot & Fienberg
1983; Niculescu-Mizil & Caruana, ICML 2005) bins predictions by confidence and compares each bin's mean confidence
with its accuracy; the expected calibration error (ECE, Naeini et al., AAAI 2015) is their gap weighted by bin size.

numpy only; :func:`tandem.evaluation.reliability.reliability_plot` draws the bins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Temperatures searched (log-spaced), then refined around the best.
T_GRID = np.exp(np.linspace(np.log(0.05), np.log(20.0), 121))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def binary_nll(logits: np.ndarray, labels: np.ndarray, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood (nats) of 0/1 ``labels`` under ``sigmoid(logits / temperature)``."""
    z = np.asarray(logits, np.float64).reshape(-1) / float(temperature)
    y = np.asarray(labels, np.float64).reshape(-1)
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature ``T`` minimising :func:`binary_nll` on held-out ``logits`` and 0/1 ``labels`` (same shape).

    Raises:
        ValueError: shapes that differ, no samples, or labels other than 0/1.
    """
    z = np.asarray(logits, np.float64).reshape(-1)
    y = np.asarray(labels, np.float64).reshape(-1)
    if z.shape != y.shape or len(z) == 0:
        raise ValueError(f"fit_temperature needs logits and labels of one non-empty shape, got {z.shape}, {y.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("fit_temperature: labels must be 0 or 1")
    losses = [binary_nll(z, y, t) for t in T_GRID]
    i = int(np.argmin(losses))
    lo, hi = T_GRID[max(i - 1, 0)], T_GRID[min(i + 1, len(T_GRID) - 1)]
    fine = np.exp(np.linspace(np.log(lo), np.log(hi), 41))
    return float(fine[int(np.argmin([binary_nll(z, y, t) for t in fine]))])


@dataclass
class Reliability:
    """Reliability bins of binary predictions, by confidence ``max(p, 1 - p)``.

    Attributes:
        edges: ``(B + 1,)`` bin edges in [0.5, 1].
        confidence: ``(B,)`` mean confidence per bin (NaN for an empty bin).
        accuracy: ``(B,)`` fraction of correct decisions (``p >= 0.5`` vs label) per bin (NaN if empty).
        count: ``(B,)`` predictions per bin.
        ece: expected calibration error (the count-weighted mean ``|accuracy - confidence|``).
    """

    edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    ece: float

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of the calibration table (NaN bins as null)."""
        nan = lambda a: [None if not np.isfinite(v) else round(float(v), 5) for v in a]  # noqa: E731
        return {"edges": self.edges.round(4).tolist(), "confidence": nan(self.confidence),
                "accuracy": nan(self.accuracy), "count": self.count.astype(int).tolist(), "ece": round(self.ece, 5)}


def reliability(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> Reliability:
    """Reliability bins of ``probabilities`` (of the positive class) against 0/1 ``labels`` (same shape).

    Raises:
        ValueError: shapes that differ, no samples, or ``bins < 1``.
    """
    p = np.asarray(probabilities, np.float64).reshape(-1)
    y = np.asarray(labels, np.float64).reshape(-1)
    if p.shape != y.shape or len(p) == 0 or bins < 1:
        raise ValueError(f"reliability needs probabilities and labels of one non-empty shape and bins >= 1, got "
                         f"{p.shape}, {y.shape}, {bins}")
    conf = np.maximum(p, 1.0 - p)
    correct = ((p >= 0.5) == (y >= 0.5)).astype(np.float64)
    edges = np.linspace(0.5, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(which, conf, minlength=bins) / count
        acc = np.bincount(which, correct, minlength=bins) / count
    gap = np.where(count > 0, np.abs(np.nan_to_num(acc) - np.nan_to_num(mean_conf)), 0.0)
    return Reliability(edges, mean_conf, acc, count, float((gap * count).sum() / count.sum()))


def f1_score(predicted: np.ndarray, labels: np.ndarray) -> float:
    """F1 of boolean ``predicted`` against 0/1 ``labels`` (1.0 when both have no positive)."""
    pr = np.asarray(predicted).reshape(-1).astype(bool)
    y = np.asarray(labels).reshape(-1) >= 0.5
    tp, fp, fn = float(np.sum(pr & y)), float(np.sum(pr & ~y)), float(np.sum(~pr & y))
    return 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)
