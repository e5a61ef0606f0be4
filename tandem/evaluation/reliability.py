"""Reliability diagrams of a verifier's (or any binary predictor's) probabilities, as PNG (matplotlib Agg).

A reliability diagram (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana, ICML 2005) plots, per confidence bin, the
fraction of correct decisions against the mean confidence: a calibrated verifier lies on the diagonal. The bins and
the expected calibration error come from :func:`planner_vlm.learned.probability_calibration.reliability`;
``benchmarks/verifier_reliability.py`` draws them for the learned verifier on held-out attempts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from planner_vlm.learned.probability_calibration import Reliability, reliability


def reliability_plot(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path: str | Path, bins: int = 10,
                     title: str = "reliability") -> dict[str, Reliability]:
    """Draw one reliability curve per named ``(probabilities, 0/1 labels)`` pair into ``path`` (PNG), with a bar
    chart of how many predictions fall in each confidence bin.

    Args:
        curves: name -> ``(probabilities of the positive class (N,), labels (N,))``, e.g. ``{"before temperature":
            ..., "after temperature": ...}``.
        path: the PNG to write (parent folders are created).
        bins: confidence bins over [0.5, 1].
        title: the figure's title.

    Returns:
        name -> its :class:`~planner_vlm.learned.probability_calibration.Reliability` (bins and ECE).

    Raises:
        ValueError: no curves, or a curve whose arrays differ in shape or are empty.
    """
    if not curves:
        raise ValueError("reliability_plot needs at least one (probabilities, labels) curve")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = {name: reliability(p, y, bins=bins) for name, (p, y) in curves.items()}
    fig, (ax, hist) = plt.subplots(2, 1, figsize=(5, 6), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    ax.plot([0.5, 1.0], [0.5, 1.0], "k--", lw=1, label="calibrated")
    width = (1.0 - 0.5) / bins / (len(stats) + 1)
    for i, (name, r) in enumerate(stats.items()):
        ok = r.count > 0
        ax.plot(r.confidence[ok], r.accuracy[ok], "o-", label=f"{name} (ECE {r.ece:.3f})")
        centres = (r.edges[:-1] + r.edges[1:]) / 2
        hist.bar(centres + (i - len(stats) / 2) * width, r.count, width=width, label=name)
    ax.set_ylabel("fraction correct")
    ax.set_ylim(0.45, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    hist.set_xlabel("confidence max(p, 1 - p)")
    hist.set_ylabel("count")
    hist.set_yscale("log")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return stats
