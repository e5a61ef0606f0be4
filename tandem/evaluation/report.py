"""Reports of ``tandem-eval`` results: PNG plots (matplotlib Agg), a Markdown table, a failure-video folder, and
the A/B comparison of success rates.

``make_report(results_dir)`` writes into ``<results_dir>/report/`` (or ``out_dir``):

* ``success_by_task.png``: full-task success per task and variant x setting, 95% Wilson intervals as error bars;
* ``progress_by_stage.png``: per task, the fraction of episodes that completed at least k subgoals (k = 1 .. 2 x goals,
  among episodes whose reference plan has >= k subgoals);
* ``recovery_vs_perturbation.png``: success after a perturbation against when it fired: left, the subgoal it followed
  (``after_success`` = n-th success event); right, the control step it fired at (binned);
* ``results.md``: the table (n, success, 95% CI, mean progress, recovery, steps, replans, main failure cause);
* ``failure_videos/``: the videos recorded by ``tandem-eval ... video=failures`` (``<key>.mp4``) and ``index.md``.

``compare(a, b)`` gives the ratio of success rates A/B per (task, setting) and pooled, with 95% intervals
(Katz log method, :func:`tandem.evaluation.statistics.ratio_interval`).
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tandem.core.errors import ConfigError
from tandem.core.output_folders import check_output_folder, create_output_folder
from tandem.evaluation.runner import video_dir_name
from tandem.evaluation.statistics import compute_metrics, ratio_interval, wilson_interval, write_metrics
from tandem.evaluation.store import VIDEO_FILE, ResultStore, load_results


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series_label(variant: str, setting: str) -> str:
    return variant if setting == "none" else f"{variant} + {setting}"


def plot_success_by_task(df: Any, path: Path) -> Path:
    """Grouped bars: one group per task (plus ``all``), one bar per variant x setting, Wilson 95% error bars."""
    plt = _plt()
    tasks = sorted(df["task"].unique()) + ["all"]
    series = sorted({(v, s) for v, s in zip(df["variant"], df["setting"])})
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(tasks) + 1) + 2.2, 3.6), dpi=100)
    for i, (v, s) in enumerate(series):
        rates, lo_err, hi_err = [], [], []
        for t in tasks:
            g = df[(df["variant"] == v) & (df["setting"] == s)]
            g = g if t == "all" else g[g["task"] == t]
            n, k = len(g), int(g["success"].sum())
            r = k / n if n else math.nan
            lo, hi = wilson_interval(k, n)
            rates.append(r)
            lo_err.append(0.0 if n == 0 else max(0.0, r - lo))  # max: float rounding at rates of 0 or 1
            hi_err.append(0.0 if n == 0 else max(0.0, hi - r))
        x = np.arange(len(tasks)) + (i - (len(series) - 1) / 2) * width
        ax.bar(x, rates, width, yerr=[lo_err, hi_err], capsize=3, label=_series_label(v, s))
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("full-task success")
    ax.set_title("Success per task (95% Wilson interval)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_progress_by_stage(df: Any, path: Path) -> Path:
    """Per task: fraction of episodes with ``subgoals_done >= k`` (successes count as complete) per variant x setting."""
    plt = _plt()
    tasks = sorted(df["task"].unique())
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.4 * len(tasks), 3.2), dpi=100, squeeze=False)
    for ax, t in zip(axes[0], tasks):
        gt = df[df["task"] == t]
        kmax = int(gt["n_subgoals_ref"].max()) if gt["n_subgoals_ref"].notna().any() else 0
        for (v, s), g in gt.groupby(["variant", "setting"], sort=True):
            ks = np.arange(1, kmax + 1)
            done = np.where(g["success"], g["n_subgoals_ref"].fillna(0), g["subgoals_done"]).astype(float)
            nref = g["n_subgoals_ref"].fillna(0).to_numpy(float)
            ys = [float(np.mean(done[nref >= k] >= k)) if np.any(nref >= k) else np.nan for k in ks]
            ax.plot(ks, ys, marker="o", label=_series_label(v, s))
        ax.set_title(t, fontsize=10)
        ax.set_xlabel("subgoal k of the reference plan")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        if kmax:
            ax.set_xticks(np.arange(1, kmax + 1))
    axes[0][0].set_ylabel("episodes with >= k subgoals done")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    fig.suptitle("Progress per stage", fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_recovery(df: Any, path: Path) -> Path:
    """Recovery (task success among episodes whose perturbation fired) against when it fired."""
    plt = _plt()
    pert = df[df["perturbed"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=100)
    if pert.empty:
        for ax in (ax1, ax2):
            ax.text(0.5, 0.5, "no episode with a perturbation that fired", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
    else:
        for (v, t), g in pert.groupby(["variant", "task"], sort=True):
            xs, ys, lo_e, hi_e = [], [], [], []
            for n, gn in g.dropna(subset=["perturb_after_success"]).groupby("perturb_after_success"):
                k, m = int(gn["success"].sum()), len(gn)
                lo, hi = wilson_interval(k, m)
                xs.append(int(n))
                ys.append(k / m)
                lo_e.append(max(0.0, k / m - lo))
                hi_e.append(max(0.0, hi - k / m))
            if xs:
                ax1.errorbar(xs, ys, yerr=[lo_e, hi_e], marker="o", capsize=3, label=f"{v} / {t}")
            steps = g["perturb_step"].astype(float).to_numpy()
            if steps.size:
                edges = np.unique(np.quantile(steps, np.linspace(0, 1, min(5, steps.size) + 1)))
                if edges.size < 2:
                    edges = np.array([steps.min() - 0.5, steps.max() + 0.5])
                idx = np.clip(np.searchsorted(edges, steps, side="right") - 1, 0, edges.size - 2)
                mids, rates = [], []
                for b in range(edges.size - 1):
                    sel = idx == b
                    if sel.any():
                        mids.append(float(steps[sel].mean()))
                        rates.append(float(g["success"].to_numpy()[sel].mean()))
                ax2.plot(mids, rates, marker="o", label=f"{v} / {t}")
        ax1.set_xlabel("perturbation after success event n")
        ax1.xaxis.get_major_locator().set_params(integer=True)
        ax1.set_ylabel("recovered (task success)")
        ax1.set_ylim(0, 1.05)
        ax1.grid(alpha=0.3)
        ax1.legend(fontsize=7, loc="lower left")
        ax2.set_xlabel("control step the perturbation fired (quantile bins, mean)")
        ax2.set_ylim(0, 1.05)
        ax2.grid(alpha=0.3)
    fig.suptitle("Recovery against perturbation time (Wilson 95%)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _fmt_rate(s: dict[str, Any] | None) -> tuple[str, str]:
    if not s or not s["n"]:
        return "–", "–"
    lo, hi = s["ci95"]
    return f"{s['successes']}/{s['n']} ({100 * s['rate']:.1f}%)", f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def markdown_table(metrics: dict[str, Any]) -> str:
    """One row per variant x setting x task, then the setting's pooled ``all`` row, then (with several settings)
    each variant's row pooled over everything, from :func:`compute_metrics`."""
    head = ("| variant | setting | task | success | 95% CI (%) | mean progress | recovered / perturbed "
            "| mean steps | mean replans | false success claims | main failure cause |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    entries = [e for g in metrics.get("groups", []) for e in [*g["per_task"], g]]
    if len(metrics.get("groups", [])) > len(metrics.get("variants", [])):  # several settings: add pooled rows
        entries += metrics.get("variants", [])
    for e in entries:
        succ, ci = _fmt_rate(e["success"])
        rec = e["recovery"]
        rec_txt = f"{rec['successes']}/{rec['n']}" if rec else "–"
        causes = e["failure_causes"]
        cause = max(causes, key=causes.get) + f" ({causes[max(causes, key=causes.get)]})" if causes else "–"
        task = f"**{e['task']}**" if e["task"] == "all" else e["task"]
        setting = f"**{e['setting']}**" if e["setting"] == "all" else e["setting"]
        lines.append(f"| {e['variant']} | {setting} | {task} | {succ} | {ci} | {e['mean_progress']:.3f} "
                     f"| {rec_txt} | {e['mean_steps']:.0f} | {e['mean_replans']:.2f} "
                     f"| {e.get('false_success_claims', 0)} | {cause} |")
    return head + "\n".join(lines) + "\n"


def collect_failure_videos(results_dirs: Sequence[Path], out: Path, df: Any) -> Path:
    """Copy the recorded failure videos into ``out`` as ``<key with __>.mp4`` and write ``index.md``."""
    out.mkdir(parents=True, exist_ok=True)
    vids: dict[str, Any] = {}
    for d in results_dirs:
        if (d / VIDEO_FILE).exists():
            vids.update(ResultStore(d).load_rows(VIDEO_FILE))
    failures = df[~df["success"]]
    lines = ["# Failure videos\n"]
    n = 0
    for _, r in failures.iterrows():
        v = vids.get(r["key"])
        src = Path(v["video"]) if v and v.get("video") else None
        if src is not None and src.exists():
            dst = out / f"{video_dir_name(r['key'])}.mp4"
            shutil.copy2(src, dst)
            n += 1
            rep = "" if v.get("reproduced", True) else " (re-run differed from the recorded row)"
            lines.append(f"- [{r['key']}]({dst.name}): {r['failure_kind']}: {r['failure']}{rep}")
        else:
            lines.append(f"- {r['key']}: {r['failure_kind']}: {r['failure']} (no video)")
    if n == 0:
        lines.insert(1, "No videos were recorded. Re-run the same `tandem-eval` command with `video=failures`: "
                        "it skips the recorded episodes and re-runs only the failed ones with rendering on.\n")
    (out / "index.md").write_text("\n".join(lines) + "\n")
    return out


def load_many(paths: Sequence[str | Path]) -> Any:
    """Rows of several results folders in one DataFrame (sorted by key); an episode present in several with the
    same ``config_hash`` is kept once.

    Raises:
        ConfigError: nothing at a path, or the same episode key with different configurations.
    """
    import pandas as pd

    frames = [load_results(p) for p in paths]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if not df.empty:  # the same episode run with the same config in two suites (e.g. an unperturbed task) counts once
        df = df.drop_duplicates(subset=["key", "config_hash"], keep="first")
        dup = df["key"][df["key"].duplicated()]
        if len(dup):
            raise ConfigError(f"episode {dup.iloc[0]!r} appears with different configurations in "
                              f"{[str(p) for p in paths]}")
    return df.sort_values("key").reset_index(drop=True) if not df.empty else df


def make_report(results: str | Path | Sequence[str | Path], out_dir: str | Path | None = None) -> dict[str, str]:
    """Write the plots, ``results.md``, ``metrics.json`` and ``failure_videos/`` for one or more results folders.

    Args:
        results: a results folder (or ``results.parquet``), or several whose rows are pooled (e.g. the
            ``standard`` and ``perturbed`` runs, so one figure shows both).
        out_dir: report folder; default ``<first results folder>/report``.

    Returns:
        artefact name -> path.

    Raises:
        ConfigError: no results at a path, duplicate episodes, or an empty result set.
        OutputFolderError: the report folder cannot be written (checked before the results are read).
    """
    paths = [Path(results)] if isinstance(results, (str, Path)) else [Path(p) for p in results]
    roots = [p if p.is_dir() else p.parent for p in paths]
    out = check_output_folder(out_dir if out_dir else roots[0] / "report")
    df = load_many(paths)
    if df.empty:
        raise ConfigError(f"{[str(p) for p in paths]} hold no episodes")
    create_output_folder(out)
    metrics = write_metrics(df, out / "metrics.json")
    art = {
        "success_by_task": str(plot_success_by_task(df, out / "success_by_task.png")),
        "progress_by_stage": str(plot_progress_by_stage(df, out / "progress_by_stage.png")),
        "recovery": str(plot_recovery(df, out / "recovery_vs_perturbation.png")),
        "metrics": str(out / "metrics.json"),
    }
    table = markdown_table(metrics)
    (out / "results.md").write_text(f"# Results: {', '.join(str(r) for r in roots)}\n\n{len(df)} episodes.\n\n{table}")
    art["table"] = str(out / "results.md")
    art["failure_videos"] = str(collect_failure_videos(roots, out / "failure_videos", df))
    return art


# ---------------------------------------------------------------------------------------------- compare
def _select(df: Any, variant: str | None, setting: str | None, which: str) -> Any:
    if variant is not None:
        if variant not in set(df["variant"]):
            raise ConfigError(f"{which}: no rows of variant {variant!r}; present: {sorted(set(df['variant']))}")
        df = df[df["variant"] == variant]
    elif df["variant"].nunique() > 1:
        raise ConfigError(f"{which} holds variants {sorted(set(df['variant']))}: choose one with --{which}-variant")
    if setting is not None:
        df = df[df["setting"] == setting]
    return df


def compare(a: str | Path, b: str | Path, a_variant: str | None = None, b_variant: str | None = None,
            setting: str | None = None) -> dict[str, Any]:
    """Ratio of success rates A/B on the (task, setting) groups both hold, per group and pooled.

    Returns:
        ``{"a", "b", "groups": [{"task", "setting", "a": rate, "b": rate, "ratio", "ci95"}], "pooled": {...}}``
        where each rate is ``{"n", "successes", "rate", "ci95"}`` (Wilson) and ``ci95`` of the ratio is Katz's.

    Raises:
        ConfigError: missing results, ambiguous variants, or no (task, setting) in common.
    """
    da = _select(load_results(a), a_variant, setting, "a")
    db = _select(load_results(b), b_variant, setting, "b")
    common = sorted(set(zip(da["task"], da["setting"])) & set(zip(db["task"], db["setting"])))
    if not common:
        raise ConfigError(f"A and B have no (task, setting) in common: A {sorted(set(zip(da['task'], da['setting'])))}, "
                          f"B {sorted(set(zip(db['task'], db['setting'])))}")

    def rate(k: int, n: int) -> dict[str, Any]:
        return {"n": n, "successes": k, "rate": k / n, "ci95": list(wilson_interval(k, n))}

    groups, ka, na, kb, nb = [], 0, 0, 0, 0
    for t, s in common:
        ga = da[(da["task"] == t) & (da["setting"] == s)]
        gb = db[(db["task"] == t) & (db["setting"] == s)]
        a_k, a_n, b_k, b_n = int(ga["success"].sum()), len(ga), int(gb["success"].sum()), len(gb)
        r, lo, hi = ratio_interval(a_k, a_n, b_k, b_n)
        groups.append({"task": t, "setting": s, "a": rate(a_k, a_n), "b": rate(b_k, b_n), "ratio": r,
                       "ci95": [lo, hi]})
        ka, na, kb, nb = ka + a_k, na + a_n, kb + b_k, nb + b_n
    r, lo, hi = ratio_interval(ka, na, kb, nb)
    return {"a": f"{a}" + (f" [{a_variant}]" if a_variant else ""), "b": f"{b}" + (f" [{b_variant}]" if b_variant else ""),
            "groups": groups, "pooled": {"a": rate(ka, na), "b": rate(kb, nb), "ratio": r, "ci95": [lo, hi]}}


def format_comparison(res: dict[str, Any]) -> str:
    """Plain-text table of :func:`compare`'s result."""

    def fr(x: dict[str, Any]) -> str:
        return f"{x['successes']:>3d}/{x['n']:<3d} {100 * x['rate']:5.1f}% [{100 * x['ci95'][0]:.1f}, {100 * x['ci95'][1]:.1f}]"

    def fratio(g: dict[str, Any]) -> str:
        r = g["ratio"]
        # a ratio over a zero rate is undefined (the interval's lower bound still says how large it is at least)
        rs = "undefined (B = 0)" if r == math.inf else ("undefined (0 / 0)" if r != r else f"{r:.2f}x")
        return f"{rs:>7s} [{g['ci95'][0]:.2f}, {g['ci95'][1]:.2f}]"

    lines = [f"A: {res['a']}", f"B: {res['b']}", "",
             f"{'task':>18s} {'setting':>16s}   {'A success':>27s}   {'B success':>27s}   A/B (95% CI)"]
    for g in res["groups"]:
        lines.append(f"{g['task']:>18s} {g['setting']:>16s}   {fr(g['a']):>27s}   {fr(g['b']):>27s}   {fratio(g)}")
    p = res["pooled"]
    lines.append(f"{'pooled':>18s} {'':>16s}   {fr(p['a']):>27s}   {fr(p['b']):>27s}   {fratio(p)}")
    return "\n".join(lines)


__all__ = ["compare", "format_comparison", "make_report", "markdown_table", "plot_progress_by_stage",
           "plot_recovery", "plot_success_by_task", "compute_metrics"]
