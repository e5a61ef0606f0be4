"""``tandem-dataset``: look at a tandem dataset (LeRobotDataset v3 with subgoal annotations).

Examples::

    tandem-dataset inspect datasets/stack_three
    tandem-dataset inspect datasets/stack_three --sheet sheet.png --episodes 0 1 --max-rows 8
    tandem-dataset inspect datasets/stack_three --json
    tandem-dataset merge datasets/ppb_exec datasets/ppb_exec_a datasets/ppb_exec_b   # shards collected in parallel

``inspect`` validates the dataset (fails loudly, exit status 2, on a malformed, incomplete or mixed-schema
dataset, listing every problem), prints counts and per-subgoal statistics, and writes a contact sheet PNG of
subgoal attempts with their goal images and keypoint traces drawn.

``merge OUT SHARD SHARD...`` writes a new dataset of the shards' episodes, in order: the first shard's committed
files copied, each later episode written again through the collector's writer (subgoal texts registered again, the
collector's journal continued: :mod:`executor_vla.dataset_merge`). Put the largest shard first.
It refuses, before writing anything (exit status 2), shards of different schemas, a shard with a collection running in
it, a seed in two shards, and an existing OUT or OUT.merging; a shard file that cannot be read is named.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tandem.cli.common import (
    ArgumentParser,
    int_at_least,
    prepare_runtime,
    quiet_broken_pipe,
    stop_on_signals,
)

prepare_runtime()


def build_parser() -> ArgumentParser:
    """The ``tandem-dataset`` argument parser, one subcommand per dataset operation (``inspect``, ...)."""
    p = ArgumentParser(prog="tandem-dataset", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ins = sub.add_parser("inspect", help="validate, summarise and draw a contact sheet")
    ins.add_argument("root", type=Path, help="dataset directory (the LeRobot root)")
    ins.add_argument("--sheet", type=Path, default=None,
                     help="contact sheet PNG path (default: outputs/inspect/<name>_sheet.png)")
    ins.add_argument("--no-sheet", action="store_true", help="do not draw the contact sheet")
    ins.add_argument("--episodes", type=int_at_least(0), nargs="*", default=None, help="episodes to draw (default: the first ones)")
    ins.add_argument("--max-rows", type=int_at_least(1), default=12, help="subgoal attempts drawn (rows of the sheet)")
    ins.add_argument("--json", action="store_true", help="print the statistics as JSON")
    ins.add_argument("--no-lerobot", action="store_true", help="skip opening it with LeRobotDataset (faster)")
    mrg = sub.add_parser("merge", help="merge shards collected in parallel into a new dataset")
    mrg.add_argument("out", type=Path, help="the new dataset's directory (must not exist)")
    mrg.add_argument("shards", type=Path, nargs="+", help="two or more tandem-collect datasets of one schema")
    return p


@quiet_broken_pipe
def main(argv: list[str] | None = None) -> None:
    """``tandem-dataset``: run the subcommand of ``argv`` (None: ``sys.argv``); bad input is one line and exit 2."""
    import logging

    from tandem.core.errors import TandemError

    args = build_parser().parse_args(argv)
    logging.getLogger("lerobot").setLevel(logging.ERROR)
    logging.getLogger("lerobot.utils.import_utils").setLevel(logging.ERROR)
    if args.command == "merge":
        _merge(args.out, args.shards)
        return
    from executor_vla.dataset_inspect import format_stats, inspect_dataset
    from tandem.core.output_folders import check_output_folder

    if not args.root.is_dir():
        print(f"error: {args.root} is not a directory", file=sys.stderr)
        sys.exit(2)
    sheet = None if args.no_sheet else (args.sheet or Path("outputs/inspect") / f"{args.root.resolve().name}_sheet.png")
    try:
        if sheet is not None:  # before the dataset is read
            check_output_folder(sheet.parent, "--sheet")
        stats = inspect_dataset(args.root, sheet, episodes=args.episodes, max_rows=args.max_rows,
                                open_with_lerobot=not args.no_lerobot)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    sys.exit(0)


def _merge(out: Path, shards: list[Path]) -> None:
    from executor_vla.dataset_merge import merge_datasets
    from tandem.core.errors import TandemError
    from tandem.core.output_folders import check_output_folder

    stop_on_signals()  # SIGTERM too: the half-written OUT.merging is removed, as on Ctrl-C
    try:
        check_output_folder(out, "merge OUT")  # before any shard is read
        report = merge_datasets(shards, out)
    except KeyboardInterrupt:
        print(f"interrupted: nothing was written to {out}", file=sys.stderr)
        sys.exit(130)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    for shard, n, first in report.shard_episodes:
        print(f"{shard}: {n} episodes -> {first}..{first + n - 1}" if n else f"{shard}: no episodes")
    seeds = ", ".join(f"{t}: {n}" for t, n in report.seeds.items()) or "none recorded"
    print(f"{report.out}: {report.episodes} episodes, {report.frames} frames; distinct seeds {seeds}")


if __name__ == "__main__":
    main()
