"""``tandem-ground``: read an instruction with a task's learned grounder: goal predicates, or a refusal.

Examples::

    tandem-ground task=stack_three instruction="put the red cube on the blue cube, then the green one on the red one"
    tandem-ground task=stack_three instruction="pour the red cube"               # refused: exit status 3
    tandem-ground instructions_file=requests.jsonl                                # one JSON line per input line
    tandem-ground task=nut_assembly instruction="..." checkpoint=outputs/grounder/nut_assembly

Prints one JSON object ``{"goals": [...], "ordered": bool, "confidence": float, "refused": null or "<reason>",
"instruction": ..., "grounded_by": "learned_grounder", "details": {...}}``. Exit status: 0 grounded, 3 refused, 2 bad
input (an unknown key or task, no instruction, a missing or corrupt checkpoint), one line on stderr naming it.

``instructions_file=<path.jsonl>``: each line an object with ``task`` and ``instruction``; one JSON line per input
line, in order; exit status 0 unless the input is bad (the whole file is checked before anything is printed).
``checkpoint=<dir>`` overrides the shipped ``checkpoints/grounder/<task>`` (a single task then).

Arguments are ``key=value`` words (no Hydra: nothing here is configured but these keys). It loads the grounder only
(MiniLM and a small head): it never imports robosuite or MuJoCo and builds no simulator.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tandem.cli.common import prepare_runtime, quiet_broken_pipe

prepare_runtime()

#: The repository's shipped grounders: ``checkpoints/grounder/<task>``.
SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "grounder"
#: Exit status of a refused instruction.
EXIT_REFUSED = 3
KEYS = ("task", "instruction", "instructions_file", "checkpoint")


def parse_kv(argv: Sequence[str], keys: Sequence[str]) -> dict[str, str]:
    """``["task=x", "out=y"]`` -> ``{"task": "x", "out": "y"}``.

    Raises:
        ConfigError: a word without ``=``, an unknown key (names it, the known ones and the closest), or a key given
            twice.
    """
    from tandem.core.errors import ConfigError, did_you_mean

    out: dict[str, str] = {}
    for word in argv:
        key, eq, value = word.partition("=")
        key = key.strip()
        if not eq:
            raise ConfigError(f"argument {word!r} is not key=value (keys: {', '.join(keys)})")
        if key not in keys:
            raise ConfigError(f"unknown key {key!r} (keys: {', '.join(keys)}){did_you_mean(key, keys)}")
        if key in out:
            raise ConfigError(f"key {key!r} given twice")
        out[key] = value
    return out


def kv_number(args: dict[str, str], key: str, default: float, kind: type, low: float, strict: bool = False) -> Any:
    """The number ``args[key]`` (``default`` if absent) as ``kind`` (int or float): finite and ``>= low`` (``> low``
    where ``strict``).

    Raises:
        ConfigError: not a number of that kind, NaN or infinite, or out of range; one line naming the key.
    """
    import math

    from tandem.core.errors import ConfigError

    raw = args.get(key)
    if raw is None:
        return kind(default)
    wanted = f"{'an integer' if kind is int else 'a finite number'} {'>' if strict else '>='} {low:g}"
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{key}={raw!r}: expected {wanted}") from None
    if not math.isfinite(value) or not (value > low if strict else value >= low):
        raise ConfigError(f"{key}={raw!r}: expected {wanted}")
    return value


def _known_task(task: str) -> str:
    from sim.tasks.registry import task_names
    from tandem.core.errors import UnknownTaskError

    if task not in task_names():
        raise UnknownTaskError(task, task_names())
    return task


def _requests(args: dict[str, str]) -> tuple[list[tuple[str, str]], bool]:
    """``([(task, instruction)], from_file)``, checked."""
    from tandem.core.errors import ConfigError

    if "instructions_file" in args:
        if "instruction" in args:
            raise ConfigError("give instruction= or instructions_file=, not both")
        path = Path(args["instructions_file"])
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            raise ConfigError(f"instructions_file {path}: cannot read it ({e.strerror or e})") from None
        out = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"instructions_file {path} line {n}: not JSON ({e.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("instruction"), str):
                raise ConfigError(f"instructions_file {path} line {n}: needs a string 'instruction'")
            task = row.get("task", args.get("task"))
            if not isinstance(task, str):
                raise ConfigError(f"instructions_file {path} line {n}: needs a string 'task' (or give task=)")
            try:
                _known_task(task)
            except ConfigError as e:
                raise ConfigError(f"instructions_file {path} line {n}: {e}") from None
            out.append((task, row["instruction"]))
        return out, True
    if "task" not in args:
        raise ConfigError("missing key 'task' (task=<name>)")
    if "instruction" not in args:
        raise ConfigError("missing key 'instruction' (instruction=\"...\" or instructions_file=<path.jsonl>)")
    return [(_known_task(args["task"]), args["instruction"])], False


def run(argv: Sequence[str]) -> int:
    """Ground what ``argv`` asks for and print it; the exit status (raises TandemError on bad input)."""
    from tandem.core.errors import ConfigError

    args = parse_kv(argv, KEYS)
    requests, from_file = _requests(args)
    import torch

    from planner_vlm.learned.grounder import InstructionGrounder

    torch.set_num_threads(1)  # one instruction at a time: one core is the budget
    grounders: dict[str, Any] = {}
    for task in dict.fromkeys(t for t, _ in requests):
        path = Path(args["checkpoint"]) if "checkpoint" in args else SHIPPED / task
        g = InstructionGrounder.load(path)
        if g.vocabulary.task != task:
            raise ConfigError(f"checkpoint {path} grounds task {g.vocabulary.task!r}, not {task!r}")
        grounders[task] = g
    by_task: dict[str, list[int]] = {}
    for i, (task, _) in enumerate(requests):
        by_task.setdefault(task, []).append(i)
    out: list[Any] = [None] * len(requests)
    for task, idx in by_task.items():
        for i, gr in zip(idx, grounders[task].ground_many([requests[i][1] for i in idx])):
            out[i] = gr
    for task, gr in zip((t for t, _ in requests), out):
        row = gr.to_json()
        row["task"] = task
        print(json.dumps(row))
    if from_file:
        return 0
    return 0 if out[0].ok else EXIT_REFUSED


@quiet_broken_pipe
def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (``sys.argv[1:]`` by default); exits with the status of :func:`run` (2 on bad input)."""
    from tandem.cli.common import exit_with

    exit_with(run, argv)


if __name__ == "__main__":
    main()
