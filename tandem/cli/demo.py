"""``tandem-demo``: run one long-horizon episode and write its video, log, memory and summary.

Examples::

    tandem-demo task=stack_three seed=0
    tandem-demo task=stack_three perturb=knock_top_cube
    tandem-demo task=pick_place_bins perturb=pull_from_bin
    tandem-demo task=nut_assembly video=false
    tandem-demo task=stack_three planner=learned verifier=learned executor=diffusion \
        instruction="put the red cube on the blue cube, then the green one on the red one"

Every component is chosen by a Hydra config group (``configs/``): ``task``, ``planner``, ``verifier``,
``executor``, ``goals``, ``perturb``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tandem.cli.common import CONFIG_DIR, fail, hydra_main, load_config, prepare_runtime

prepare_runtime()


def run(cfg) -> dict:
    """Validate ``cfg`` (:class:`tandem.runtime.config.DemoConfig`), build the stack, run one episode with a live
    progress display, print the summary.

    Raises:
        ConfigError / UnknownNameError: bad input (named), before anything is built.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tandem.runtime.config import DemoConfig, to_dict
    from tandem.runtime.registry import build_stack
    from tandem.runtime.rollout import run_episode

    cfg = load_config(DemoConfig, cfg)
    console = Console(stderr=True)
    out_dir = Path(cfg.out_dir)
    stack = build_stack(cfg)
    try:
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
                                   "replans", "steps", "wall_time_s", "recovered", "privileged")}
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


@hydra_main(config_name="demo", check=check_config)
def main(cfg) -> None:
    try:
        summary = run(cfg)
    except Exception as e:  # noqa: BLE001 - print one clear line, not a traceback from inside robosuite
        fail(e)
    # 0: task achieved; 3: the episode ran and was recorded, but failed (a planner's refusal of the instruction
    # included: recorded in memory, nothing moved); 2: bad input (see `fail`), an instruction the task's reference
    # reading refuses among it.
    sys.exit(0 if summary["success"] else 3)


__all__ = ["main", "run", "CONFIG_DIR"]

if __name__ == "__main__":
    main()
