"""``tandem-replay``: show a recorded episode from a run directory's memory store; re-render it.

Examples::

    tandem-replay outputs/demo/stack_three/seed0-none-20261130-101010          # timeline of its one episode
    tandem-replay outputs/eval/perturbed --list                                 # the episodes in a store
    tandem-replay outputs/eval/perturbed --episode 12 --all-events              # plus facts and model exchanges
    tandem-replay <run_dir> --episode 3 --video                                 # re-simulate -> annotated MP4
    tandem-replay <run_dir> --episode 3 --rerun                                 # -> rerun.io recording (.rrd)
    rerun <run_dir>/replay/episode0003.rrd                                      # open it in the viewer

``<run_dir>`` is a folder holding ``memory.sqlite`` (what ``tandem-demo`` and ``tandem-eval`` write) or the
database file itself. Without ``--episode`` the latest episode is shown (and, if there are several, the list).
Exit status: 0 on success; 2 for bad input (no store, a corrupt or foreign file, no such episode, an output folder
that cannot be written: checked before anything is re-simulated). Each episode's rerun recording id is unique to its
store and episode (two run folders of one name never share one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tandem.cli.common import ArgumentParser, fail, int_at_least, prepare_runtime

prepare_runtime()


def _episodes_table(episodes):
    from rich.table import Table

    table = Table(title="episodes")
    for c in ("episode", "task", "status", "success", "steps", "seed", "key"):
        table.add_column(c)
    for e in episodes:
        table.add_row(str(e.id), e.task, e.status, "" if e.success is None else str(e.success), str(e.last_step),
                      str(e.meta.get("seed", "")), str(e.meta.get("key", "")))
    return table


def run(args: argparse.Namespace) -> int:
    """Print the timeline (and list) and write the requested video / recording; returns the exit status."""
    from rich.console import Console

    from memory.replay import episode_recording_id, timeline, timeline_table, write_rerun
    from memory.store import MemoryStore
    from tandem.core.errors import ConfigError
    from tandem.core.output_folders import check_output_folder, create_output_folder

    console = Console()
    path = Path(args.run_dir)
    store = MemoryStore(path, create=False)
    try:
        episodes = store.episodes()
        if not episodes:
            raise ConfigError(f"{store.path} holds no episodes")
        if args.list or (args.episode is None and len(episodes) > 1):
            console.print(_episodes_table(episodes))
            if args.list:
                return 0
        info = store.episode(args.episode if args.episode is not None else episodes[-1].id)
        out_dir = (path if path.is_dir() else path.parent) / "replay"
        video_out = (Path(args.video) if args.video else out_dir / f"episode{info.id:04d}.mp4") \
            if args.video is not None else None
        rerun_out = (Path(args.rerun) if args.rerun else out_dir / f"episode{info.id:04d}.rrd") \
            if args.rerun is not None else None
        for out in (video_out, rerun_out):  # before the timeline is shown or anything is re-simulated
            if out is not None:
                check_output_folder(out.parent, "--video" if out is video_out else "--rerun")
        records = store.records(info.id)
        title = (f"episode {info.id}: {info.task} seed {info.meta.get('seed', '?')} - {info.status}"
                 + ("" if info.success is None else f", success={info.success}") + f" - {info.instruction}")
        console.print(timeline_table(timeline(records, all_events=args.all_events), title=title))
        if video_out is not None:
            from tandem.runtime.replay import render_video

            create_output_folder(video_out.parent)
            written, err = render_video(store, info.id, video_out)
            console.print(f"wrote {written} (re-simulated; max proprio deviation from the log {err:.2e})")
        if rerun_out is not None:
            create_output_folder(rerun_out.parent)
            frames, sim = None, None
            if not args.no_resim:
                from tandem.runtime.replay import resimulate

                sim = resimulate(store, info.id)
                frames = ((step, obs.images) for step, obs in sim)
            written = write_rerun(rerun_out, records, store.steps(info.id), store.images(info.id), frames=frames,
                                  recording_id=episode_recording_id(store.store_id, store.path.parent.name, info.id))
            note = "" if sim is None else f" (camera streams re-simulated; max proprio deviation {sim.max_proprio_error:.2e})"
            console.print(f"wrote {written}{note}; open it with: rerun {written}")
        return 0
    finally:
        store.close()


def build_parser() -> ArgumentParser:
    """The ``tandem-replay`` argument parser: a run directory (or memory database) and what to show of it."""
    p = ArgumentParser(prog="tandem-replay", description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", help="run directory holding memory.sqlite, or the database file")
    p.add_argument("--episode", type=int_at_least(0), default=None, help="episode number in the store (default: the latest)")
    p.add_argument("--list", action="store_true", help="list the episodes and exit")
    p.add_argument("--all-events", action="store_true", help="also show object facts and model exchanges")
    p.add_argument("--video", nargs="?", const="", default=None, metavar="MP4",
                   help="re-simulate and write the annotated video (default <run_dir>/replay/episodeNNNN.mp4)")
    p.add_argument("--rerun", nargs="?", const="", default=None, metavar="RRD",
                   help="write a rerun.io recording (default <run_dir>/replay/episodeNNNN.rrd)")
    p.add_argument("--no-resim", action="store_true", help="with --rerun: no camera streams (no simulator needed)")
    return p


def main(argv: list[str] | None = None) -> None:
    """``tandem-replay``: print or record a stored episode of ``argv`` (None: ``sys.argv``); a tandem error is one
    line and exit 2."""
    args = build_parser().parse_args(argv)
    try:
        code = run(args)
    except Exception as e:  # noqa: BLE001 - one clear line for tandem errors (exit 2)
        fail(e)
        return
    sys.exit(code)


if __name__ == "__main__":
    main()
