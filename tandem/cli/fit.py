"""``tandem-fit``: one command from a task's definition to its trained, evaluated learned stack.

Examples::

    tandem-fit task=stack_three out=outputs/fit/stack_three            # configs/fit/stack_three.yaml, 2 workers
    tandem-fit task=stack_three out=outputs/fit/st3 recipe=configs/fit/debug.yaml workers=1
    tandem-fit task=stack_three out=outputs/fit/stack_three            # again: resumes after an interruption
    tandem-fit task=libero_10 out=outputs/fit/libero_10                # one executor for LIBERO-10's scenes

Keys (``key=value``): ``task`` (a registered task, or a suite with its own recipe: ``libero_10``), ``out`` (the run folder: datasets, models, evaluation, and
``fit/`` with logs, stage records and the report), ``recipe`` (a recipe file; default ``configs/fit/<task>.yaml``),
``workers`` (stages at once, one thread each; default 2), ``stages`` (comma-separated stage names: run only these and
what they need).

The recipe format and the stage runner: :mod:`tandem.evaluation.fit`. Ends with ``<out>/fit/report.md``: each
model's held-out figures, the closed-loop table, wall and CPU time per stage. Exit status 0 when every stage
finished, 1 when one failed (its log is named), 2 on bad input (one line, nothing written), 130 on Ctrl-C or
SIGTERM (the running stages are stopped; a rerun resumes).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tandem.cli.common import prepare_runtime, stop_on_signals
from tandem.cli.ground import _known_task, kv_number, parse_kv

prepare_runtime()

KEYS = ("task", "out", "recipe", "workers", "stages")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "fit"


def run(argv: Sequence[str]) -> int:
    """Check ``argv`` (nothing is written before), run the recipe, write the report; the exit status."""
    from tandem.core.errors import ConfigError
    from tandem.core.output_folders import check_output_folder
    from tandem.evaluation.fit.recipe import Recipe
    from tandem.evaluation.fit.report import write_report
    from tandem.evaluation.fit.runner import FitRunner

    args = parse_kv(argv, KEYS)
    for key in ("task", "out"):
        if not args.get(key):
            raise ConfigError(f"missing key {key!r} (tandem-fit task=<name> out=<dir>)")
    task = args["task"]
    recipe_path = Path(args["recipe"]) if args.get("recipe") else CONFIG_DIR / f"{task.replace('/', '_')}.yaml"
    if args.get("recipe") or not recipe_path.exists():  # a suite's own recipe (libero_10) names a set of tasks
        task = _known_task(task)
    if not args.get("recipe") and not recipe_path.exists():
        known = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
        raise ConfigError(f"task {task!r} has no fit recipe {recipe_path} (recipes: {', '.join(known)}; "
                          "or recipe=<file>)")
    recipe = Recipe.load(recipe_path)
    workers = int(kv_number(args, "workers", 2, int, 1))
    if args.get("stages"):
        wanted = [s.strip() for s in args["stages"].split(",") if s.strip()]
        names = [s.name for s in recipe.stages]
        for w in wanted:
            if w not in names:
                raise ConfigError(f"stages: unknown stage {w!r} (stages: {', '.join(names)})")
        keep: set[str] = set()

        def need(n: str) -> None:
            if n not in keep:
                keep.add(n)
                for m in recipe.stage(n).needs:
                    need(m)

        for w in wanted:
            need(w)
        recipe = Recipe(task=recipe.task, stages=tuple(s for s in recipe.stages if s.name in keep))
    out = check_output_folder(args["out"], "out")  # a file in the way, or not writable: before any stage
    runner = FitRunner(recipe, task, out, workers=workers)
    stop_on_signals()  # SIGTERM and a background job's SIGINT stop the stages as Ctrl-C does
    t0 = time.monotonic()
    try:
        results = runner.run()
    except KeyboardInterrupt:
        print("[fit] interrupted: rerun the same command to resume", file=sys.stderr)
        return 130
    report = write_report(recipe, task, out, results, time.monotonic() - t0)
    print(json.dumps({"report": str(out / "fit" / "report.md"), "ok": report["ok"],
                      "wall_min_this_run": report["wall_min_this_run"],
                      "cpu_min_all_stages": report["cpu_min_all_stages"]}))
    return 0 if report["ok"] else 1


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (``sys.argv[1:]`` by default)."""
    from tandem.cli.common import exit_with

    exit_with(run, argv)


if __name__ == "__main__":
    main()
