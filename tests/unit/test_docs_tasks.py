"""docs/tasks.md runs as written: its example task (the python and yaml blocks) is a complete task, and its commands
name real entry points, options and files. No simulator here; tests/sim/test_docs_tasks_sim.py runs the example's
oracle stack in robosuite.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib

import numpy as np
import pytest
from docs_blocks import ROOT, TASKS_GUIDE, blocks, drop_modules, example_task_files, install_example_task

from sim.perturbations import PERTURBATIONS
from sim.tasks.base import TaskDefinition
from sim.tasks.registry import make_task
from sim.tasks.roles import TaskExpert, TaskPerturbations, TaskPredicates, TaskScene
from sim.tasks.types import SKILL_PREDICATES
from tandem.core.errors import UnknownObjectError, UnknownSkillError
from tandem.core.vocabulary import TaskVocabulary

ROLES = {"scene": TaskScene, "predicates": TaskPredicates, "expert": TaskExpert, "perturbations": TaskPerturbations}
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.fixture
def example(tmp_path, monkeypatch):
    name = install_example_task(tmp_path, monkeypatch)
    yield name
    drop_modules(name)


def test_every_block_is_checked_here():
    """A new block in the guide needs a check: a file of the example task, or a bash block of commands."""
    for b in blocks():
        assert (b.lang in ("python", "yaml") and b.path is not None) or b.lang == "bash", (
            f"docs/tasks.md line {b.line}: a {b.lang or 'plain'} block this test does not check")
    name, files = example_task_files()
    assert set(files) == {"scene.py", "vocabulary.yaml", "predicates.py", "expert.py", "perturbations.py",
                          "__init__.py"}, "the guide promises a complete task: four role files, the vocabulary and"


def test_the_example_task_is_complete(example):
    task = make_task(example)
    assert isinstance(task, TaskDefinition) and type(task).__module__ == f"sim.tasks.{example}"
    for role, cls in ROLES.items():  # as tests/unit/test_task_parts.py checks every registered task
        part = getattr(task.parts, role)
        assert isinstance(part, cls) and type(part).__module__ == f"sim.tasks.{example}.{role}"
        assert not getattr(type(part), "__abstractmethods__", None), role
    episode = task.sample_spec(np.random.default_rng(0))
    spec = episode.spec
    assert task.name == spec.name == example and set(task.skills) <= set(SKILL_PREDICATES)
    assert spec.goals == ("grasped(cube)",) and spec.instruction == "pick up the cube"
    assert task.label_vocabulary() == (("cube",), ("grasped(cube)",))
    assert set(task.object_names(episode)) <= set(task.label_vocabulary()[0])
    assert set(task.perturbation_names) <= set(PERTURBATIONS)
    assert task.reference_subgoals(episode) == [("pick", ("cube",))]


def test_the_example_vocabulary_reads_its_words(example):
    vocab = make_task(example).parts.scene.vocabulary()
    assert isinstance(vocab, TaskVocabulary) and vocab.task == example
    assert "block" in vocab.objects["cube"] and vocab.skills["pick"] == SKILL_PREDICATES["pick"]


def test_the_example_expert_refuses_what_the_task_lacks(example):
    expert = make_task(example).parts.expert
    episode = make_task(example).sample_spec(np.random.default_rng(0))
    with pytest.raises(UnknownSkillError):
        expert.expert_waypoints(None, episode, "stack", ("cube", "table"))
    with pytest.raises(UnknownObjectError):
        expert.expert_waypoints(None, episode, "pick", ("sphere",))


def _fit_args(args: list[str]) -> None:
    from tandem.cli.fit import KEYS
    from tandem.cli.ground import _known_task, parse_kv
    from tandem.evaluation.fit.recipe import Recipe

    kv = parse_kv(args, KEYS)  # unknown keys raise
    _known_task(kv["task"])
    Recipe.load(ROOT / kv["recipe"])


#: How each command of the guide's bash blocks is checked without running it: its arguments parse and name what exists.
CHECKS = {"tandem-fit": _fit_args}


def test_the_bash_blocks_name_real_commands_options_and_files():
    lines = [ln for b in blocks() if b.lang == "bash" for ln in b.text.splitlines() if ln.strip()]
    assert lines
    outs = {}
    for line in lines:
        cmd, *args = shlex.split(line, comments=True)
        if cmd.startswith(".venv/bin/"):
            name = cmd.removeprefix(".venv/bin/")
            assert name in SCRIPTS, f"{line!r}: no entry point {name} in pyproject's [project.scripts]"
            assert name in CHECKS, f"{line!r}: add a check of {name}'s arguments to CHECKS"
            CHECKS[name](args)
            outs.update(a.split("=", 1) for a in args if a.startswith("out="))
        else:
            assert shutil.which(cmd), f"{line!r}: {cmd} is not a command"
            for a in args:  # a file a command before it writes: tandem-fit's report
                assert a == f"{outs['out']}/fit/report.md", f"{line!r}: {a} is written by no command above"


def test_the_commands_in_the_prose_are_valid():
    from tandem.cli.common import compose_command_line

    guide = TASKS_GUIDE.read_text()
    demo = re.search(r"`tandem-demo task=lift_cube ([^`]+)`", guide.replace("\n", " "))
    assert demo, "the guide no longer shows the demo command of its example task"
    compose_command_line("demo", demo.group(1).split())  # the options (the task needs its configs/task/ file)
    bench = re.search(r"`python (benchmarks/\S+\.py) ([^`]+)`", guide)
    assert bench and (ROOT / bench.group(1)).is_file()
    source = (ROOT / bench.group(1)).read_text()
    for flag in re.findall(r"--[\w-]+", bench.group(2)):
        assert f'add_argument("{flag}"' in source, f"{bench.group(1)} has no option {flag}"
    for path in re.findall(r"`((?:sim|tandem|tests|configs)/[\w/.]+\.(?:py|yaml))`", guide):
        if "lift_cube" not in path and "<" not in path:
            assert (ROOT / path).is_file(), f"docs/tasks.md names {path}, which does not exist"
