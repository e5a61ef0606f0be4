"""``tandem-train-grounder``: train a task's learned instruction grounder on one CPU core, in minutes.

Examples::

    tandem-train-grounder task=stack_three out=checkpoints/grounder/stack_three minutes=9.5   # the shipped recipe
    tandem-train-grounder task=nut_assembly out=outputs/grounder/nut minutes=3 seed=1
    tandem-train-grounder task=pick_place_bins out=checkpoints/grounder/pick_place_bins overwrite=true

Keys (``key=value``, no Hydra): ``task`` (a registered task), ``out`` (the checkpoint directory), ``minutes`` (the
whole budget in CPU minutes of one thread, generation and MiniLM encoding included, so a busy machine takes longer
but trains as much; default 8), ``seed`` (the training draw; validation draws
from ``seed + 500``; default 0), ``n`` (training paraphrases; default 6000), ``overwrite`` (``true`` to replace a
checkpoint already in ``out``), ``corpora`` (comma-separated training sources of
:data:`planner_vlm.learned.grounder_corpora.CORPORA`, equal weights; default all of them).

Data come from independent phrasing generators (:mod:`planner_vlm.learned.grounder_corpora`: the project grammar's
split ``"train"`` and several hands; never the evaluation files), see :mod:`planner_vlm.learned.grounder_train`. The checkpoint (``model.safetensors``, ``config.json`` with the
vocabulary, thresholds, seeds, minutes and validation metrics, ``command.txt``) is written only after training.
Bad input: one line on stderr naming the key, exit status 2, nothing written.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict

from tandem.cli.common import prepare_runtime
from tandem.cli.ground import _known_task, kv_number, parse_kv
from tandem.core.output_folders import check_output_folder

prepare_runtime()

KEYS = ("task", "out", "minutes", "seed", "n", "overwrite", "corpora")


def run(argv: Sequence[str]) -> int:
    """Check ``argv``, train, save; the exit status (raises TandemError on bad input, before writing anything)."""
    from tandem.core.errors import ConfigError

    args = parse_kv(argv, KEYS)
    for key in ("task", "out"):
        if not args.get(key):
            raise ConfigError(f"missing key {key!r} (tandem-train-grounder task=<name> out=<dir>)")
    task = _known_task(args["task"])
    minutes = kv_number(args, "minutes", 8.0, float, 0, strict=True)
    seed = int(kv_number(args, "seed", 0, int, 0))
    n = int(kv_number(args, "n", 6000, int, 1))
    overwrite = args.get("overwrite", "false").lower()
    if overwrite not in ("true", "false"):
        raise ConfigError(f"overwrite={args['overwrite']!r}: expected true or false")
    out = check_output_folder(args["out"], "out")  # a file in the way, or not writable: before any training
    if (out / "config.json").exists() and overwrite != "true":
        raise ConfigError(f"out={out} already holds a checkpoint (overwrite=true replaces it)")
    from planner_vlm.learned.grounder_corpora import DEFAULT_CORPORA, Mixture

    names = [c.strip() for c in args["corpora"].split(",")] if args.get("corpora") else list(DEFAULT_CORPORA)
    phrasing = Mixture(names)

    import torch

    from planner_vlm.learned.grounder_train import train_grounder
    from sim.tasks.registry import task_vocabulary

    torch.set_num_threads(1)
    vocab = task_vocabulary(task)
    command = "tandem-train-grounder " + shlex.join(list(argv))
    grounder = train_grounder(vocab, phrasing, minutes=minutes, seed=seed, n_pos=n, n_impossible=n // 5,
                              n_neg=(2 * n) // 5, command=command, log=lambda m: print(m, file=sys.stderr))
    grounder.save(out, command=command)
    print(json.dumps({"checkpoint": str(out), "minutes": grounder.meta["minutes"],
                      "thresholds": asdict(grounder.thresholds),
                      "validation": grounder.meta["metrics"]["validation"]}))
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (``sys.argv[1:]`` by default)."""
    from tandem.cli.common import exit_with

    exit_with(run, argv)


if __name__ == "__main__":
    main()
