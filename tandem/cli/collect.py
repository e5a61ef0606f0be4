"""``tandem-collect``: demonstrations from the oracle planner and the scripted executor -> LeRobotDataset v3.

Examples::

    tandem-collect task=stack_three episodes=50 out=datasets/stack_three
    tandem-collect task=stack_three episodes=50 out=datasets/st_dart dart.sigma=0.1 perturb=knock_top_cube
    tandem-collect task=pick_place_bins episodes=20 out=datasets/bins keep_failed=true

The same agent loop as ``tandem-demo`` runs every episode (config groups ``task``, ``planner``, ``verifier``,
``executor``, ``goals``, ``perturb``); every control step becomes one frame labelled with its subgoal, goal
image and keypoint trace (see :mod:`tandem.runtime.collect`). ``episodes`` is the target total: rerun the same
command to resume an interrupted collection (a total below what the dataset holds is refused). Exit status: 0
done, 2 bad input or write error, 3 fewer episodes than asked (too many failures), 130 interrupted by Ctrl-C,
SIGINT or SIGTERM (saved episodes are kept).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tandem.cli.common import (
    CONFIG_DIR,
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


def check_target(target: int, already: int, out: str) -> None:
    """Refuse a target total below what ``out`` already holds: ``episodes`` is the total wanted, not a count to
    add, and Hydra reads ``episodes=+1`` as 1 (a collection that would save nothing and exit 0).

    Raises:
        ConfigError: ``target < already``, naming the total that would add episodes.
    """
    if target < already:
        raise ConfigError(f"episodes={target} is below the {already} episodes already in {out}: episodes is the "
                          f"total wanted, not a count to add (episodes={already + 1} adds one; episodes=+N reads "
                          f"as N)")


def run_record_folder(task: str) -> Path:
    """Where a collection's Hydra record (``.hydra/``, ``collect.log``) goes: ``outputs/collect/<task>/<time>``
    (``configs/collect.yaml``), made once the input is validated."""
    return Path("outputs/collect") / task / time.strftime("%Y%m%d-%H%M%S")


def run(cfg) -> dict:
    """Validate ``cfg`` (:class:`tandem.runtime.config.CollectConfig`), then collect with a live progress display
    (episodes bar + steps of the current episode); print the report. Where stderr is not a terminal (a log file, a
    job scheduler), rich draws no live display, so each episode's outcome is printed there as one line instead.

    Raises:
        ConfigError / UnknownNameError / OutputFolderError: bad input (named), before anything is written or built.
    """
    import logging

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tandem.runtime.collect import collect, open_writer, report_json
    from tandem.runtime.config import CollectConfig

    cfg = load_config(CollectConfig, cfg)
    check_output_folder(cfg.out, "out")  # before anything is built; the dataset writer creates it
    make_output_folder(run_record_folder(cfg.task.name))  # Hydra's record of the run; removed if input is refused

    for name in ("lerobot", "lerobot.configs.video", "lerobot.utils.import_utils"):
        logging.getLogger(name).setLevel(logging.WARNING)
    console = Console(stderr=True)
    target = cfg.episodes
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console) as prog:
        w = open_writer(cfg)  # schema check and roll-back report before the env is built
        start, recovered = w.num_episodes, w.recovered
        w.close()
        if recovered:  # said before any refusal below: the roll-back to the last commit has happened
            console.print(f"[yellow]recovered {cfg.out} from an interrupted write:[/] " + "; ".join(recovered))
        check_target(target, start, cfg.out)
        eps = prog.add_task(f"{cfg.task.name} episodes", total=target, completed=start,
                            info=f"{start} already in {cfg.out}" if start else "")
        steps = prog.add_task("  steps", total=None, info="")
        counts = {"ok": 0, "fail": 0}

        def observer(rec):
            if rec.step == 1:
                prog.reset(steps, total=rec.agent.task.max_steps if cfg.max_steps is None else int(cfg.max_steps))
            sg = rec.subgoal
            prog.update(steps, completed=rec.step, info=sg.text if sg is not None else "")

        def on_episode(out, writer):
            counts["ok" if out.summary.get("success") else "fail"] += 1
            line = (f"seed {out.seed}: {'saved' if out.saved else 'discarded'} ({out.frames} frames, "
                    f"{out.wall_s:.0f}s)  ok {counts['ok']} failed {counts['fail']}")
            prog.update(eps, completed=writer.num_episodes, info=line)
            if not console.is_terminal:
                console.print(f"{cfg.task.name} episodes {writer.num_episodes}/{target}: {line}", highlight=False)

        report = collect(cfg, on_episode=on_episode, observer=observer)
    shown = report_json(report)
    shown.pop("seeds", None)
    shown["episodes_target"] = target
    print(json.dumps(shown, indent=2))
    if report.interrupted:
        print(f"interrupted: {report.episodes_total} episodes are committed in {report.root}; "
              f"rerun the same command to resume", file=sys.stderr)
    return shown


def check_config(cfg):
    """``cfg`` as a checked ``CollectConfig`` (the check before Hydra writes anything).

    Raises:
        ConfigError / UnknownNameError: bad input, naming the key.
    """
    from tandem.runtime.config import CollectConfig

    return load_config(CollectConfig, cfg)


@hydra_main(config_name="collect", check=check_config)
def main(cfg) -> None:
    """``tandem-collect``: collect the configured episodes into a dataset. Exit 0: every episode asked for was
    saved; 3: fewer; 2: bad input; 130: interrupted (Ctrl-C or SIGTERM)."""
    stop_on_signals()
    try:
        report = run(cfg)
    except KeyboardInterrupt:
        print("interrupted before any episode was saved", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - one clear line, not a traceback from inside robosuite/LeRobot
        fail(e)
    if report["interrupted"]:
        sys.exit(130)
    sys.exit(0 if report["episodes_total"] >= report["episodes_target"] else 3)


__all__ = ["main", "run", "stop_on_signals", "CONFIG_DIR"]


if __name__ == "__main__":
    main()
