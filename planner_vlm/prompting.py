"""Building the prompt pieces shared by the VLM planner and verifier.

Pure functions of the task, the memory view and the observation; no model calls. The memory is rendered by
:meth:`tandem.core.memory_view.MemoryView.to_text`, the one renderer of memory for a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner_vlm.clients.base import ImagePart
from tandem.core.errors import ConfigError
from tandem.core.memory_view import MemoryView
from tandem.core.types import Observation, TaskSpec

#: The plan prompt's budget for the task memory, in tokens (``MemoryView.to_text``; about the 4,000 characters the
#: prompt used to allow).
PLAN_MEMORY_TOKENS = 1000
#: The verify prompt's budget for the task memory, in tokens: the subgoal's earlier attempts and failures, object facts.
VERIFY_MEMORY_TOKENS = 300


def skills_block(task: TaskSpec) -> str:
    """One line per skill: ``- stack(A, B): stack the A cube on the B cube; succeeds when on(A,B)``."""
    from planner_vlm.plan_parser import skill_arity  # local: parser imports nothing from here

    letters = "ABCDEFGH"
    lines = []
    for skill in sorted(task.skills):
        n = skill_arity(task, skill)
        ph = [letters[i] for i in range(n)]
        meaning = task.subgoal_text(skill, ph)
        lines.append(f"- {skill}({', '.join(ph)}): {meaning}; succeeds when {task.predicate_for(skill, ph)}")
    return "\n".join(lines) or "(none)"


def names_block(task: TaskSpec, places: bool = False) -> str:
    """The task's object (or, with ``places``, target) names for the prompt, each with the words the task's vocabulary
    declares for it: ``red (red cube, red block)``; the bare names where the task declares no vocabulary."""
    names = task.targets if places else task.objects
    vocab = task.vocabulary
    words = {} if vocab is None else (vocab.places if places else vocab.objects)
    shown = []
    for name in names:
        said = [w for w in words.get(name, ()) if w != name]
        shown.append(f"{name} ({', '.join(said)})" if said else name)
    return ", ".join(shown) or "(none)"


def memory_block(view: MemoryView | Mapping[str, Any] | None, max_tokens: int) -> str:
    """The task memory as prompt text: ``MemoryView.to_text(max_tokens)`` of ``view`` (a ``TaskMemory.view()`` dict
    is read with ``MemoryView.from_dict``), or ``(nothing recorded yet)`` for an empty view."""
    mv = view if isinstance(view, MemoryView) else MemoryView.from_dict(view)
    return "(nothing recorded yet)" if mv == MemoryView() else mv.to_text(max_tokens)


#: Start of the line of the plan and verify prompts (``planner_vlm/prompts/*.md``) after which the memory's text follows,
#: up to the next blank line.
MEMORY_HEADER = "TASK MEMORY ("


def memory_in_prompt(prompt: str) -> MemoryView:
    """The memory view a plan or verify prompt shows, read back from its text (:meth:`MemoryView.from_text`): what a
    model stand-in (``tandem-oracle-sim-vlm``, the tests' fake server) knows of the memory. An empty view where the
    prompt has no memory block or shows ``(nothing recorded yet)``."""
    lines = prompt.splitlines()
    start = next((i + 1 for i, ln in enumerate(lines) if ln.startswith(MEMORY_HEADER)), None)
    if start is None:
        return MemoryView()
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return MemoryView.from_text("\n".join(lines[start:end]))


def failure_note(view: MemoryView | Mapping[str, Any] | None) -> str:
    """A replanning instruction built from the view's latest failure, or ``""`` when there is none."""
    mv = view if isinstance(view, MemoryView) else MemoryView.from_dict(view)
    last = mv.last_failure
    if last is None:
        return ""
    head = f"LAST FAILURE: subgoal {last['subgoal']} failed on attempt {last['attempt']}: {last['reason']}."
    return (head + " Look at the images, decide what is actually done now, and replan: keep the failed "
            "subgoal in remaining if it should be retried, or change the plan if it was wrong.")


def observation_images(obs: Observation, cameras: list[str] | tuple[str, ...] | None,
                       suffix: str = "") -> list[ImagePart]:
    """The observation's images for ``cameras`` (all, in sorted order, if None) as labelled parts.

    Raises:
        ConfigError: if a requested camera is not in ``obs.images`` (names the available ones).
    """
    names = list(cameras) if cameras else sorted(obs.images)
    parts = []
    for cam in names:
        if cam not in obs.images:
            raise ConfigError(f"camera {cam!r} not in the observation; available: {sorted(obs.images)}")
        parts.append(ImagePart(obs.images[cam], label=cam + suffix))
    return parts
