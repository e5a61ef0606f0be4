"""Render first frames of a task's scenes with and without its objects: the presence model's training data.

For each seed the scene is reset and rendered from the state model's camera and the wrist camera (the arm at its
start pose, looking down on the source bin: it sees what the state model's camera sees hidden behind a tall box) as
drawn, with each object removed in
turn, and with ``--random-subsets`` random subsets removed (each object with probability 0.4, at least one). A
removed object is moved 3 m off the table right after ``reset`` (``RobosuiteEnv.teleport``), as
``benchmarks/absent_object.py`` does: the script's hand and labels read the simulator's truth, which is what makes
them labels (a data-labelling tool, like the collector; no runtime component reads them).

Writes one ``.npz``: ``images uint8 (N, V, H, W, 3)`` (the cameras' RGB, upright, origin top-left, in ``cameras``'
order), ``present bool (N, O)`` in ``objects``' order, ``seeds int64 (N,)``, ``objects``, ``cameras``. Seeds must not overlap the ones a presence model is evaluated on: train on
2000.., choose its threshold on 700-999, measure on 1000-1199.

Usage::

    MUJOCO_GL=egl python scripts/render_presence_scenes.py --task pick_place_bins --seed-start 2000 --seeds 1500 \\
        --out datasets/presence/pick_place_bins_train.npz
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

#: Where a removed object goes: 3 m off the table along +x (m, world frame), as benchmarks/absent_object.py.
OFF_TABLE_SHIFT_M = np.array([3.0, 0.0, 0.0])
#: Each object's chance of removal in a random subset.
REMOVE_PROBABILITY = 0.4


def render(task: str, seeds: list[int], cameras: tuple[str, ...], image_size: tuple[int, int], random_subsets: int,
           rng_seed: int = 0, expected_objects: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` (see the module docstring).

    Raises:
        ConfigError / UnknownNameError: an unknown task or camera (from the env); objects of the scene other than
            ``expected_objects`` (the state checkpoint's vocabulary: a checkpoint of another task).
    """
    from sim.robosuite_env import RobosuiteEnv
    from tandem.core.errors import ConfigError

    rng = np.random.default_rng(rng_seed)
    env = RobosuiteEnv(task, cameras=cameras, image_size=image_size)
    images, present, seed_of = [], [], []
    try:
        env.reset(seed=seeds[0])
        objects = sorted(env.observe().privileged["objects"])  # every object of the scene, not only the named
        if expected_objects is not None and set(objects) != set(expected_objects):
            raise ConfigError(f"the state checkpoint's objects {sorted(expected_objects)} are not task {task!r}'s "
                              f"{objects}: a checkpoint of another task")
        for seed in seeds:
            env.reset(seed=seed)
            drawn = env.save_state()
            poses = env.observe().privileged["objects"]  # the labeller's hand: privileged by design
            subsets: list[tuple[str, ...]] = [(), *((o,) for o in objects)]
            for _ in range(random_subsets):
                removed = tuple(o for o in objects if rng.uniform() < REMOVE_PROBABILITY)
                subsets.append(removed or (objects[int(rng.integers(len(objects)))],))
            for removed in subsets:
                env.restore_state(drawn)
                if removed:
                    env.teleport({o: (np.asarray(poses[o]["pos"]) + OFF_TABLE_SHIFT_M, np.asarray(poses[o]["quat"]))
                                  for o in removed})
                obs = env.observe()
                images.append(np.stack([np.asarray(obs.images[c], np.uint8) for c in cameras]))
                present.append([o not in removed for o in objects])
                seed_of.append(seed)
    finally:
        env.close()
    return {"images": np.stack(images), "present": np.array(present, bool), "seeds": np.array(seed_of, np.int64),
            "objects": np.array(objects), "cameras": np.array(cameras)}


def main(argv: list[str] | None = None) -> int:
    """Render and write the ``.npz``; exit status 2 with one line on bad input."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="pick_place_bins")
    p.add_argument("--seed-start", type=int, default=2000)
    p.add_argument("--seeds", type=int, default=1500, help="how many consecutive seeds from --seed-start")
    p.add_argument("--random-subsets", type=int, default=2, help="random removal subsets per seed, beside one per object")
    p.add_argument("--state-checkpoint", type=Path, default=None,
                   help="the camera and image size come from this state checkpoint (default: the shipped one)")
    p.add_argument("--extra-cameras", nargs="*", default=["wrist"],
                   help="cameras rendered beside the state model's (same image size)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if a.seeds < 1 or a.seed_start < 0 or a.random_subsets < 0:
        print(f"render_presence_scenes: --seeds must be >= 1, --seed-start and --random-subsets >= 0 (got "
              f"{a.seeds}, {a.seed_start}, {a.random_subsets})", file=sys.stderr)
        return 2
    from sim.tasks.registry import task_names
    from tandem.core.errors import TandemError

    if a.task not in task_names():
        print(f"render_presence_scenes: unknown task {a.task!r} (known: {task_names()})", file=sys.stderr)
        return 2
    out = a.out if a.out.suffix == ".npz" else a.out.with_name(a.out.name + ".npz")  # numpy appends it anyway
    if out.is_dir():
        print(f"render_presence_scenes: --out {out} is a directory; give a .npz file path", file=sys.stderr)
        return 2
    ckpt = a.state_checkpoint or Path(__file__).resolve().parents[1] / "checkpoints" / "state" / a.task
    try:
        model = json.loads((ckpt / "config.json").read_text())["model"]
        camera, size = str(model["camera"]), (int(model["image_size"][0]), int(model["image_size"][1]))
        objects = tuple(str(o) for o in model["objects"])
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        print(f"render_presence_scenes: cannot read the camera and objects of state checkpoint {ckpt} (is it one? "
              f"config.json needs model.camera, model.image_size, model.objects): {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    t0 = time.time()
    try:
        arrays = render(a.task, list(range(a.seed_start, a.seed_start + a.seeds)),
                        tuple(dict.fromkeys([camera, *a.extra_cameras])), size, a.random_subsets,
                        expected_objects=objects)
    except TandemError as e:
        print(f"render_presence_scenes: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(json.dumps({"out": str(out), "frames": len(arrays["images"]), "objects": arrays["objects"].tolist(),
                      "cameras": arrays["cameras"].tolist(), "image_size": list(size),
                      "present_share": round(float(arrays["present"].mean()), 3),
                      "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
