"""The learned instruction grounder (planner_vlm/learned/grounder.py), its training and its CLIs.

The shipped checkpoints (checkpoints/grounder/<task>) ground the README's example and refuse each kind of bad
instruction; a tiny head trained for seconds on a stand-in generator learns (beats chance clearly on held-out
draws); ``tandem-ground`` exits 0 / 3 / 2 and never imports the simulator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tandem.core.vocabulary import TaskVocabulary, goals_equal

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "checkpoints" / "grounder"
TASKS = ("stack_three", "pick_place_bins", "nut_assembly")


def _vocab(task: str) -> TaskVocabulary:
    from sim.tasks.registry import task_vocabulary

    return task_vocabulary(task)


# ---------------------------------------------------------------------------------------------- stand-in generator
def _stand_in() -> SimpleNamespace:
    """A tiny phrasing generator with phrasing.py's interface (sample_goals, phrase, negatives), for the training
    test: one template family per split, so "heldout" draws use words the train split never does."""
    fillers = {"train": ["", "please ", "could you "], "heldout": ["kindly ", "i want you to "]}
    joins = {"train": [", then ", " and then "], "heldout": [". after that, ", ", next "]}
    oov = {"train": ["purple", "yellow", "bowl", "plate"], "heldout": ["orange", "cup"]}
    verbs = {"train": ["pour", "open"], "heldout": ["throw away", "wipe"]}

    def word(vocab, name, rng, split):
        table = {**vocab.objects, **vocab.places}
        ws = table[name]
        return ws[int(rng.integers(len(ws)))] if split == "train" else ws[-1 - int(rng.integers(min(2, len(ws))))]

    def sample_goals(vocab, rng):
        objs = list(vocab.objects)
        rng.shuffle(objs)
        skill = vocab.goal_skills[0]
        if vocab.ordered_by_support:
            n = int(rng.integers(1, len(objs)))
            return [vocab.goal(skill, (objs[i + 1], objs[i])) for i in range(n)]
        n = int(rng.integers(1, len(objs) + 1))
        return [vocab.goal(skill, (o, vocab.own_place.get(o, ""))) for o in objs[:n]]

    def phrase(vocab, goals, rng, split):
        parts = []
        for g in goals:
            skill, args = vocab.goal_skill_of(g)
            verb = vocab.skill_words[skill][int(rng.integers(3))]
            where = f" on the {word(vocab, args[1], rng, split)}" if len(args) > 1 else " in its bin"
            parts.append(f"{verb} the {word(vocab, args[0], rng, split)}{where}")
        fill = fillers[split][int(rng.integers(len(fillers[split])))]
        join = joins[split][int(rng.integers(len(joins[split])))]
        return fill + join.join(parts), True

    def negatives(vocab, rng, split):
        kind = ("out_of_vocabulary", "missing_skill", "empty")[int(rng.integers(3))]
        obj = word(vocab, list(vocab.objects)[int(rng.integers(len(vocab.objects)))], rng, "train")
        if kind == "out_of_vocabulary":
            return f"put the {obj} on the {oov[split][int(rng.integers(len(oov[split])))]}", kind
        if kind == "missing_skill":
            return f"{verbs[split][int(rng.integers(len(verbs[split])))]} the {obj}", kind
        return ("", "hmm", "do it")[int(rng.integers(3))], kind

    return SimpleNamespace(sample_goals=sample_goals, phrase=phrase, negatives=negatives, __name__="stand_in")


@pytest.fixture(scope="module")
def encoder():
    from planner_vlm.learned.grounder import TokenEncoder

    return TokenEncoder()


def test_a_tiny_head_learns(encoder) -> None:
    """Trained for a few seconds on a small generated set, the head reads held-out draws far above chance."""
    from planner_vlm.learned.grounder import Featurizer, GrounderConfig, InstructionGrounder, Lexicon
    from planner_vlm.learned.grounder_train import encode_examples, generate, train_head

    vocab = _vocab("stack_three")
    gen = _stand_in()
    train, info = generate(vocab, gen, 300, 0, 60, seed=0)
    cfg = GrounderConfig(names=Lexicon.of(vocab).names, goal_skills=vocab.goal_skills,
                         skills=Lexicon.of(vocab).skills, max_goals=info["max_goals"], dim=64, decoder_layers=1,
                         arg1_allowed=tuple(map(tuple, info["arg1_allowed"].tolist())),
                         arg2_allowed=tuple(map(tuple, info["arg2_allowed"].tolist())))
    enc = encode_examples(train, Featurizer(vocab, encoder), cfg, info["known_unknowns"])
    net, log = train_head(enc, cfg, max_seconds=60.0, max_steps=250, seed=0)
    assert log["loss_last"] < 0.5 * log["loss_first"]
    grounder = InstructionGrounder(vocab, cfg, net, encoder=encoder)
    rng = np.random.default_rng(1000)
    right = 0
    n = 60
    for _ in range(n):
        goals = gen.sample_goals(vocab, rng)
        text, ordered = gen.phrase(vocab, goals, rng, "heldout")
        r = grounder.read([text])[0]
        right += goals_equal(vocab, r.goals, goals, ordered)
    # chance: 6 single goals + 6 two-goal towers; a reading that ignores the words gets ~1/12 of them
    assert right / n > 0.4, right


# ---------------------------------------------------------------------------------------------- shipped checkpoints
@pytest.fixture(scope="module")
def shipped(encoder):
    from planner_vlm.learned.grounder import InstructionGrounder

    return {t: InstructionGrounder.load(SHIPPED / t, encoder=encoder) for t in TASKS}


def test_shipped_checkpoints_load_and_record_their_training(shipped) -> None:
    for task, g in shipped.items():
        assert g.vocabulary.task == task
        assert g.vocabulary == _vocab(task)
        assert g.meta["seeds"]["split"] == "train"
        assert "tandem-train-grounder" in g.meta["command"]
        assert (SHIPPED / task / "command.txt").read_text().strip()
        size = sum(p.stat().st_size for p in (SHIPPED / task).iterdir())
        assert size < 5e6


def test_readme_example(shipped) -> None:
    g = shipped["stack_three"].ground("put the red cube on the blue cube, then the green one on the red one")
    assert g.ok, g.refused
    assert g.goals == ("on(red,blue)", "on(green,red)")
    assert g.grounded_by == "learned_grounder"
    assert 0.0 < g.confidence <= 1.0


def test_other_tasks_ground(shipped) -> None:
    g = shipped["pick_place_bins"].ground("put the milk carton in its bin, then the soda can")
    assert g.ok and goals_equal(shipped["pick_place_bins"].vocabulary, g.goals, ("in_bin(milk)", "in_bin(can)"),
                                False), g
    g = shipped["nut_assembly"].ground("put the round nut on the round peg")
    assert g.ok and g.goals == ("on_peg(round_nut,round_peg)",), g


@pytest.mark.parametrize("task, text, named", [
    ("stack_three", "put the purple cube on the blue cube", "purple"),
    ("pick_place_bins", "put the milk carton in the purple bin", "purple"),
    ("stack_three", "pour the red cube on the blue cube", "pour"),
    ("pick_place_bins", "pour the milk into its bin", "pour"),
    ("stack_three", "stack the red cube on the red cube", "on(red,red)"),
    ("nut_assembly", "put the square nut on the round peg", "square_nut"),
    ("stack_three", "", "empty"),
    ("nut_assembly", "   ", "empty"),
])
def test_refusals_name_the_fault(shipped, task, text, named) -> None:
    g = shipped[task].ground(text)
    assert not g.ok and g.goals == ()
    assert named in g.refused and "\n" not in g.refused, g.refused


def test_ground_many_keeps_order(shipped) -> None:
    g = shipped["stack_three"]
    texts = ["stack the green cube on the red cube", "", "put the blue block on the green block"]
    out = g.ground_many(texts)
    assert [o.instruction for o in out] == texts
    assert out[0].goals == ("on(green,red)",) and out[1].refused and out[2].goals == ("on(blue,green)",)


def test_load_names_missing_or_corrupt_files(tmp_path, shipped) -> None:
    from planner_vlm.learned.grounder import InstructionGrounder
    from tandem.core.errors import CheckpointError

    with pytest.raises(CheckpointError, match="not a directory"):
        InstructionGrounder.load(tmp_path / "nothing")
    ck = shipped["stack_three"].save(tmp_path / "ck", command="test")
    (ck / "model.safetensors").write_bytes(b"junk")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        InstructionGrounder.load(ck)
    (ck / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json"):
        InstructionGrounder.load(ck)
    (ck / "config.json").unlink()
    with pytest.raises(CheckpointError, match="config.json"):
        InstructionGrounder.load(ck)


# ---------------------------------------------------------------------------------------------- CLIs
def _ground(capsys, *args: str) -> tuple[int, str, str]:
    from tandem.cli.ground import main

    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_ground_cli_exit_codes(capsys) -> None:
    code, out, _ = _ground(capsys, "task=stack_three",
                           "instruction=put the red cube on the blue cube, then the green one on the red one")
    assert code == 0
    got = json.loads(out)
    assert got["goals"] == ["on(red,blue)", "on(green,red)"] and got["refused"] is None
    assert isinstance(got["ordered"], bool) and 0 < got["confidence"] <= 1
    code, out, _ = _ground(capsys, "task=stack_three", "instruction=put the purple cube on the blue cube")
    assert code == 3 and "purple" in json.loads(out)["refused"]


def test_ground_cli_never_imports_the_simulator() -> None:
    """In a fresh process (other tests may have imported robosuite into this one): a run in-process leaves no
    robosuite or mujoco in ``sys.modules``."""
    import subprocess

    script = ("import sys\nfrom tandem.cli.ground import main\ntry:\n    main(['task=nut_assembly', "
              "'instruction=put the round nut on the round peg'])\nexcept SystemExit as e:\n    code = e.code\n"
              "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('robosuite', 'mujoco')))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.stdout.strip().splitlines()[-1] == "0 []", run.stdout + run.stderr


@pytest.mark.parametrize("args, named", [
    (("task=nope", "instruction=stack it"), "nope"),
    (("task=stack_three",), "instruction"),
    (("instruction=stack it",), "task"),
    (("task=stack_three", "instruction=x", "colour=red"), "colour"),
    (("task=stack_three", "instruction=x", "checkpoint=/nonexistent/ck"), "/nonexistent/ck"),
    (("task=stack_three", "instruction"), "instruction"),
])
def test_ground_cli_bad_input_is_one_line(capsys, args, named) -> None:
    code, out, err = _ground(capsys, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and named in err, err


def test_ground_cli_jsonl(tmp_path, capsys) -> None:
    lines = [{"task": "stack_three", "instruction": "stack the green cube on the red cube"},
             {"task": "pick_place_bins", "instruction": "pour the milk"},
             {"task": "nut_assembly", "instruction": "put the square nut on the square peg"}]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, _ = _ground(capsys, f"instructions_file={f}")
    assert code == 0
    rows = [json.loads(x) for x in out.strip().splitlines()]
    assert [r["instruction"] for r in rows] == [x["instruction"] for x in lines]
    assert rows[0]["goals"] == ["on(green,red)"] and rows[1]["refused"] and rows[2]["goals"] == \
        ["on_peg(square_nut,square_peg)"]
    f.write_text(json.dumps(lines[0]) + "\n{broken\n")
    code, out, err = _ground(capsys, f"instructions_file={f}")
    assert code == 2 and out == "" and "line 2" in err


def test_train_cli_bad_input_writes_nothing(tmp_path, capsys) -> None:
    from tandem.cli.train_grounder import main

    for args, named in ((["task=nope", f"out={tmp_path / 'a'}"], "nope"),
                        (["task=stack_three", f"out={tmp_path / 'b'}", "minutes=-1"], "minutes"),
                        (["task=stack_three", f"out={tmp_path / 'c'}", "seed=x"], "seed"),
                        (["task=stack_three"], "out"),
                        (["task=stack_three", f"out={tmp_path / 'd'}", "lr=1"], "lr")):
        with pytest.raises(SystemExit) as e:
            main(args)
        err = capsys.readouterr().err
        assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and named in err, err
    assert list(tmp_path.iterdir()) == []
