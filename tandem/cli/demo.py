"""``tandem-demo``: run one long-horizon episode and write its video, log, memory and summary.

Examples::

    tandem-demo                                    # the wholly non-privileged stack, stack_three, seed 5000
    tandem-demo task=stack_three perturb=knock_top_cube
    tandem-demo task=pick_place_bins perturb=pull_from_bin planner.best_localized_first=true
    tandem-demo task=nut_assembly video=false
    tandem-demo task=stack_three instruction="put the red cube on the blue cube, then the green one on the red one"
    tandem-demo planner=oracle verifier=oracle executor=scripted goals=oracle   # the oracle stack: the upper bound

Every component is chosen by a Hydra config group (``configs/``): ``task``, ``planner``, ``verifier``,
``executor``, ``goals``, ``perturb``; the default (``configs/demo.yaml``) is ``planner=learned verifier=learned
executor=diffusion goals=none`` on held-out seed 5000.

Exit status: 0 task achieved; 3 the episode ran and failed; 2 bad input (one line; nothing written), a stack that
cannot be built (a corrupt checkpoint, one of another task) or an output folder that cannot be written among it;
130 interrupted by Ctrl-C or SIGTERM (the video so far is finished and ``summary.json`` says ``"interrupted": true``).
"""

from __future__ import annotations

import json
import sys

from tandem.cli.common import (
    CONFIG_DIR,
    check_output_folder,
    fail,
    hydra_main,
    load_config,
    make_output_folder,
    prepare_runtime,
    remove_created_output_folders,
    stop_on_signals,
)

prepare_runtime()


def run(cfg) -> dict:
    """Validate ``cfg`` (:class:`tandem.runtime.config.DemoConfig`), build the stack, run one episode with a live
    progress display, print the summary.

    Raises:
        ConfigError / UnknownNameError / OutputFolderError: bad input (named), before anything is built.
        BuildError (CheckpointError among them): the stack cannot be built, before anything is written.
        EpisodeInterrupted: Ctrl-C or SIGTERM during the episode, its artefacts so far written.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tandem.runtime.config import DemoConfig, to_dict
    from tandem.runtime.registry import build_stack
    from tandem.runtime.rollout import run_episode

    cfg = load_config(DemoConfig, cfg)
    console = Console(stderr=True)
    out_dir = check_output_folder(cfg.out_dir, "out_dir")
    stack = build_stack(cfg)
    try:
        make_output_folder(out_dir, "out_dir")
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
                      TextColumn("{task.fields[subgoal]}"), TimeElapsedColumn(), console=console, transient=False) as prog:
            bar = prog.add_task(f"{cfg.task.name} seed {cfg.seed}", total=None, subgoal="")

            def on_step(rec):
                agent = rec.agent
                if bar_total[0] is None:
                    bar_total[0] = agent.task.max_steps
                    prog.update(bar, total=bar_total[0])
                sg = rec.subgoal
                prog.update(bar, completed=rec.step,
                            subgoal=f"[{agent.status.subgoals_done} ok, {agent.status.replans} replans] "
                                    f"{sg.text if sg else ''}")

            bar_total = [None]
            result = run_episode(stack.env, stack.agent, seed=int(cfg.seed), out_dir=out_dir,
                                 record_video=bool(cfg.video), on_step=on_step,
                                 meta={"config": to_dict(cfg)})
    finally:
        stack.close()
    s = result.summary
    shown = {k: s.get(k) for k in ("task", "seed", "instruction", "success", "failure", "subgoals_done", "attempts",
                                   "replans", "steps", "wall_time_s", "recovered", "privileged", "planner_source")}
    g = s.get("grounding") or {}
    shown["grounded_goals"] = g.get("goals") if g else None  # the planner's own reading of the words
    shown["grounded_by"] = g.get("grounded_by") if g else None
    shown["judge_goals"] = s.get("judge_goals")  # the env's reference reading, that success is judged by
    print(json.dumps(shown, indent=2))
    print("wrote:")
    for name, path in result.paths.items():
        print(f"  {name:8s} {path}")
    return s


def check_config(cfg):
    """``cfg`` as a checked ``DemoConfig`` (the check before Hydra writes anything).

    Raises:
        ConfigError / UnknownNameError: bad input, naming the key.
    """
    from tandem.runtime.config import DemoConfig

    return load_config(DemoConfig, cfg)


def report_interrupt(error: KeyboardInterrupt) -> None:
    """Say in one line on stderr what an interrupt left: the episode's artefacts so far, or nothing."""
    from tandem.runtime.rollout import EpisodeInterrupted

    if isinstance(error, EpisodeInterrupted):
        s = error.result.summary
        paths = error.result.paths
        video = "the video so far is finished and " if "video" in paths else ""
        print(f"interrupted at step {s.get('steps')}: {video}the summary (interrupted: true) is in "
              f"{paths.get('summary', 'nowhere (no out_dir)')}", file=sys.stderr)
    else:
        remove_created_output_folders()
        print("interrupted before the episode started: nothing was written", file=sys.stderr)


@hydra_main(config_name="demo", check=check_config)
def main(cfg) -> None:
    """``tandem-demo``: run one long-horizon episode of the configured stack, writing its video, log and memory under
    the run directory. Exit 0: task achieved; 3: the episode ran and failed; 2: bad input; 130: interrupted."""
    stop_on_signals()  # SIGTERM too: the episode ends where it is, its video playable and its summary written
    try:
        summary = run(cfg)
    except KeyboardInterrupt as e:
        report_interrupt(e)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - print one clear line, not a traceback from inside robosuite
        fail(e)
    # 0: task achieved; 3: the episode ran and was recorded, but failed (a planner's refusal of the instruction
    # included: recorded in memory, nothing moved); 2: bad input (see `fail`), an instruction the task's reference
    # reading refuses among it.
    sys.exit(0 if summary["success"] else 3)


__all__ = ["main", "report_interrupt", "run", "CONFIG_DIR"]

if __name__ == "__main__":
    main()
