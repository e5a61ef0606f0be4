"""Statistics of a results table: success rates with 95% Wilson intervals (Wilson 1927), ratios of rates with
Katz log intervals (Katz et al. 1978), mean progress (``subgoals_done / (2 x goals)``, clipped to 1), recovery among
perturbed episodes, failure causes and latency percentiles.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from tandem.evaluation.rows import TIMING_COLUMNS


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927); 95% for the default ``z``.

    Returns:
        ``(low, high)`` in [0, 1]; ``(nan, nan)`` when ``n == 0``.

    Raises:
        ValueError: ``successes`` outside ``[0, n]``.
    """
    if n == 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = max(0.0, center - half), min(1.0, center + half)
    if successes == n:  # exact bounds where rounding would leave 1 - 1e-16
        hi = 1.0
    if successes == 0:
        lo = 0.0
    return (lo, hi)


def ratio_interval(a: int, n_a: int, b: int, n_b: int, z: float = 1.959964) -> tuple[float, float, float]:
    """Ratio of two success rates ``(a/n_a) / (b/n_b)`` with its 95% interval (Katz et al. 1978, log method).

    A zero count gets the usual 0.5 continuity correction on both cells of that arm, so the interval stays finite.

    Returns:
        ``(ratio, low, high)``; ratio is ``inf`` when b == 0 < a, nan when both are 0.

    Raises:
        ValueError: a count outside ``[0, n]`` or ``n == 0``.
    """
    for s, n in ((a, n_a), (b, n_b)):
        if n <= 0 or not 0 <= s <= n:
            raise ValueError(f"need 0 <= successes <= n and n > 0, got {s}/{n}")
    ratio = (a / n_a) / (b / n_b) if b > 0 else (math.inf if a > 0 else math.nan)
    a_c, na_c, b_c, nb_c = float(a), float(n_a), float(b), float(n_b)
    if a == 0 or b == 0:
        a_c, na_c, b_c, nb_c = a + 0.5, n_a + 0.5, b + 0.5, n_b + 0.5
    rr = (a_c / na_c) / (b_c / nb_c)
    se = math.sqrt(max(1 / a_c - 1 / na_c + 1 / b_c - 1 / nb_c, 0.0))
    return ratio, math.exp(math.log(rr) - z * se), math.exp(math.log(rr) + z * se)


def _rate(s: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(s, n)
    return {"n": int(n), "successes": int(s), "rate": (s / n) if n else math.nan, "ci95": [lo, hi]}


def _pct(values: Any) -> dict[str, float] | None:
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    if v.size == 0:
        return None
    return {"p50": float(np.percentile(v, 50)), "p90": float(np.percentile(v, 90)),
            "p99": float(np.percentile(v, 99)), "n_episodes": int(v.size)}


def _group_metrics(df: Any) -> dict[str, Any]:
    succ = int(df["success"].sum())
    pert = df[df["perturbed"]]
    causes = df.loc[~df["success"], "failure_kind"].fillna("unknown").value_counts().to_dict()
    return {
        "success": _rate(succ, len(df)),
        "mean_progress": float(df["progress"].mean()) if len(df) else math.nan,
        "mean_steps": float(df["steps"].mean()) if len(df) else math.nan,
        "mean_replans": float(df["replans"].mean()) if len(df) else math.nan,
        "recovery": _rate(int(pert["success"].sum()), len(pert)) if len(pert) else None,
        "perturbation_fired": int(len(pert)),
        "false_success_claims": int((df["agent_claims_success"].astype(bool) & ~df["success"].astype(bool)).sum())
        if "agent_claims_success" in df else 0,
        "failure_causes": {str(k): int(v) for k, v in causes.items()},
        "latency_ms": {
            "plan_p50_per_episode": _pct(df.get("plan_latency_p50_ms", [])),
            "plan_p90_per_episode": _pct(df.get("plan_latency_p90_ms", [])),
            "action_p50_per_episode": _pct(df.get("action_latency_p50_ms", [])),
            "action_p99_per_episode": _pct(df.get("action_latency_p99_ms", [])),
        },
        "wall_time_s_total": float(np.nansum(np.asarray(df["wall_time_s"], dtype=float))) if "wall_time_s" in df else None,
    }


def compute_metrics(df: Any) -> dict[str, Any]:
    """Metrics of a results DataFrame: per variant (everything pooled: e.g. the whole ``perturbed`` suite), per
    variant x setting (all tasks pooled) and per variant x setting x task.

    * ``success``: ``{"n", "successes", "rate", "ci95": [low, high]}`` (Wilson 95%).
    * ``mean_progress``: mean of ``subgoals_done / (2 x goals)`` clipped to 1 (1 on task success).
    * ``recovery``: success rate among episodes where the perturbation fired (Wilson 95%), None if none fired.
    * ``latency_ms``: percentiles over episodes of each episode's own p50/p90/p99 planner and executor latency.
    * ``failure_causes``: failure kind -> count.
    * ``false_success_claims``: episodes where the agent claimed success and the simulator says the task failed.
    """
    out: dict[str, Any] = {"n_episodes": int(len(df)), "variants": [], "groups": []}
    if df.empty:
        return out
    for variant, g in df.groupby("variant", sort=True):  # everything in this result set, pooled
        out["variants"].append({"variant": variant, "setting": "all", "task": "all", **_group_metrics(g)})
    for (variant, setting), g in df.groupby(["variant", "setting"], sort=True):
        entry = {"variant": variant, "setting": setting, "task": "all", **_group_metrics(g), "per_task": []}
        for task, gt in g.groupby("task", sort=True):
            entry["per_task"].append({"variant": variant, "setting": setting, "task": task, **_group_metrics(gt)})
        out["groups"].append(entry)
    return out


def write_metrics(df: Any, path: str | Path) -> dict[str, Any]:
    """``compute_metrics`` -> JSON file (NaN written as null). Returns the metrics."""
    m = compute_metrics(df)
    Path(path).write_text(json.dumps(_nan_to_none(m), indent=2))
    return m


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def deterministic_view(df: Any) -> Any:
    """``df`` without :data:`TIMING_COLUMNS`, sorted by key: what two backends must agree on exactly."""
    drop = [c for c in (*TIMING_COLUMNS, "traceback") if c in df.columns]
    return df.drop(columns=drop).sort_values("key").reset_index(drop=True)
