"""``tandem-eval``: run an evaluation suite, render its report, or compare two result sets.

Examples::

    tandem-eval suite=smoke                              # Hydra: configs/eval.yaml + configs/suite/smoke.yaml
    tandem-eval suite=standard backend=ray workers=2     # same rows on a local Ray instance
    tandem-eval suite=perturbed video=failures           # also record videos of the failed episodes
    tandem-eval report outputs/eval/standard             # plots + Markdown table + failure-video folder
    tandem-eval compare outputs/eval/hier outputs/eval/flat --a-variant hierarchical --b-variant flat

``report`` and ``compare`` are routed before Hydra parses the command line (they take plain arguments).
A ``lerobot-eval`` key (``env.task=libero_10``, ``--policy.path=...``) is refused with tandem's name for it
(:data:`LEROBOT_EVAL_KEYS`; the whole mapping is in ``docs/lerobot_conventions.md``).
Exit status: 0 on success; 2 for a bad configuration or input (one line naming the problem), a variant whose stack
cannot be built (a corrupt or mismatched checkpoint: never recorded as a result) or an output folder that cannot
be written among it; 130 interrupted.
"""

from __future__ import annotations

import json
import sys

from tandem.cli.common import (
    ArgumentParser,
    check_output_folder,
    fail,
    hydra_main,
    load_config,
    make_output_folder,
    prepare_runtime,
    stop_on_signals,
)
from tandem.core.errors import ConfigError

prepare_runtime()

SUBCOMMANDS = ("report", "compare")

#: ``lerobot-eval`` (LeRobot 0.6) keys -> how ``tandem-eval`` says it. Not aliases: a tandem suite also fixes the
#: seeds (a held-out block) and perturbations, and ``env`` holds only the settings shared by its tasks.
LEROBOT_EVAL_KEYS: dict[str, str] = {
    "env.type": "drop it: the suite's task names choose the simulator (libero_10/<task> is LIBERO)",
    "env.task": "suite=<name>, e.g. suite=libero_10 (configs/suite/<name>.yaml)",
    "env.task_ids": "suite.tasks (configs/suite/libero_10.yaml lists LIBERO's tasks in LIBERO's order)",
    "env.fps": "env.control_freq",
    "env.episode_length": "suite.max_steps",
    "env.observation_height": "env.image_size=[H,W]",
    "env.observation_width": "env.image_size=[H,W]",
    "env.camera_name": "env.cameras (agentview, wrist)",
    "eval.n_episodes": "suite.seeds (episodes per task, from suite.seed_start)",
    "eval.batch_size": "workers",
    "policy.path": "'run_variants=[lerobot]' variants.lerobot.executor.checkpoint=<path>",
    "policy.device": "variants.lerobot.executor.device",
    "output_dir": "out_dir",
}


def lerobot_key_error(argv: list[str]) -> str | None:
    """The one-line refusal of the first ``lerobot-eval`` key among ``argv`` (``key=value`` or ``--key=value``),
    naming tandem's equivalent; None when there is none."""
    given = [(k, v) for k, _, v in (a.lstrip("-").partition("=") for a in argv) if k in LEROBOT_EVAL_KEYS]
    given.sort(key=lambda kv: kv[0] == "env.type")  # the other keys say more
    if not given:
        return None
    key, value = given[0]
    hint = f"suite={value}" if key == "env.task" and value else LEROBOT_EVAL_KEYS[key]
    return f"{key} is lerobot-eval's key; in tandem-eval: {hint} (docs/lerobot_conventions.md)"


def run(cfg) -> dict:
    """Validate ``cfg`` (:class:`tandem.evaluation.config.EvalConfig`, every variant's components included), run
    the suite and variants it chooses, print the headline metrics.

    Raises:
        ConfigError / UnknownNameError / OutputFolderError: bad input (named), before any episode runs.
        TandemError (BuildError, CheckpointError...): a variant's stack cannot be built; nothing is recorded for it,
            and a results folder this run made is removed (:func:`tandem.cli.common.fail`).
    """
    from tandem.evaluation.config import EvalConfig
    from tandem.evaluation.runner import evaluate
    from tandem.evaluation.suite import Suite, Variant
    from tandem.runtime.config import to_dict

    c = load_config(EvalConfig, cfg)
    make_output_folder(c.out_dir, "out_dir")
    variants = [Variant.from_config(n, to_dict(c.variants[n])) for n in c.run_variants]
    outcome = evaluate(
        Suite.from_config(to_dict(c.suite)), variants, out_dir=c.out_dir, backend=c.backend, workers=c.workers,
        env=to_dict(c.env), agent=to_dict(c.agent), resume=c.resume, retry_errors=c.retry_errors,
        video_failures=c.video == "failures", ray_address=c.ray.address, progress=c.progress,
        max_episodes=c.max_episodes, validate=c.validate, allow_training_seeds=c.allow_training_seeds,
    )
    print(f"{outcome.n_run} episode(s) run, {outcome.n_skipped} already recorded; results in {outcome.out_dir}")
    print(f"ran on {outcome.ran_on}")
    for g in outcome.metrics.get("groups", []):
        s = g["success"]
        lo, hi = s["ci95"]
        rec = g["recovery"]
        rec_txt = f"  recovery {rec['successes']}/{rec['n']}" if rec else ""
        print(f"  {g['variant']:>14s} {g['setting']:>16s}  success {s['successes']}/{s['n']} = {s['rate']:.3f} "
              f"[{lo:.3f}, {hi:.3f}]  progress {g['mean_progress']:.3f}{rec_txt}  "
              f"false success claims {g.get('false_success_claims', 0)}")
    if outcome.n_video:
        print(f"re-ran {outcome.n_video} failed episode(s) with video under {outcome.out_dir}/videos")
    return outcome.metrics


def report_main(argv: list[str]) -> int:
    """``tandem-eval report <results_dir>... [--out DIR]``."""
    from tandem.evaluation.report import make_report

    ap = ArgumentParser(prog="tandem-eval report", description="Plots, Markdown table and failure videos.")
    ap.add_argument("results", nargs="+", help="results folder(s) written by tandem-eval (or results.parquet "
                    "files); several are pooled into one report")
    ap.add_argument("--out", default=None, help="report folder (default: <first results>/report)")
    args = ap.parse_args(argv)
    if args.out is not None:
        check_output_folder(args.out, "--out")  # before any result is read (make_report checks it too, unnamed)
    paths = make_report(args.results, out_dir=args.out)
    for name, p in paths.items():
        print(f"  {name:18s} {p}")
    return 0


def compare_main(argv: list[str]) -> int:
    """``tandem-eval compare A B [--a-variant X] [--b-variant Y] [--task T] [--json]``."""
    from tandem.evaluation.report import compare, format_comparison

    ap = ArgumentParser(prog="tandem-eval compare",
                                 description="Ratio of success rates A/B with 95%% intervals (Katz log method).")
    ap.add_argument("a", help="results folder or results.parquet of A (e.g. the hierarchical stack)")
    ap.add_argument("b", help="results folder or results.parquet of B (e.g. the flat policy)")
    ap.add_argument("--a-variant", default=None, help="only rows of this variant in A (needed if A holds several)")
    ap.add_argument("--b-variant", default=None, help="only rows of this variant in B")
    ap.add_argument("--setting", default=None, help="only this perturbation setting (e.g. none)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    res = compare(args.a, args.b, a_variant=args.a_variant, b_variant=args.b_variant, setting=args.setting)
    print(json.dumps(res, indent=2) if args.json else format_comparison(res))
    return 0


def check_config(cfg):
    """``cfg`` as a checked ``EvalConfig`` (the check before Hydra writes anything).

    Raises:
        ConfigError / UnknownNameError: bad input, naming the key.
    """
    from tandem.evaluation.config import EvalConfig

    return load_config(EvalConfig, cfg)


@hydra_main(config_name="eval", check=check_config)
def _hydra_entry(cfg) -> None:
    stop_on_signals()  # SIGTERM too: the local pool's workers are ended, and the finished rows are kept
    try:
        run(cfg)
    except KeyboardInterrupt:
        print(f"interrupted: the finished episodes are recorded in {cfg.get('out_dir') or 'the results folder'}; "
              "rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - one clear line, not a traceback from inside a worker
        fail(e)


def main() -> None:
    """Entry point: ``report``/``compare`` sub-commands, else the Hydra evaluation run."""
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        cmd, rest = sys.argv[1], sys.argv[2:]
        try:
            code = report_main(rest) if cmd == "report" else compare_main(rest)
        except Exception as e:  # noqa: BLE001
            fail(e)
        sys.exit(code)
    lerobot = lerobot_key_error(sys.argv[1:])
    if lerobot is not None:
        fail(ConfigError(lerobot))
    _hydra_entry()


if __name__ == "__main__":
    main()


__all__ = ["main", "run", "report_main", "compare_main", "lerobot_key_error", "LEROBOT_EVAL_KEYS"]
