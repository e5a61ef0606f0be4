"""Building the prompt pieces shared by the VLM planner and verifier.

Pure functions of the task, the memory view and the observation; no model calls.
"""

from __future__ import annotations

import json
from typing import Any

from planner_vlm.clients.base import ImagePart
from tandem.core.errors import ConfigError
from tandem.core.types import Observation, TaskSpec

#: Memory-view keys shown to the model, in this order.
MEMORY_KEYS = ("done", "remaining", "current", "failures", "facts", "attempts", "last_outcome", "hints")


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


def compact_memory(view: dict[str, Any], max_failures: int = 5, max_chars: int = 4000) -> str:
    """JSON of the memory view for the prompt: the keys in :data:`MEMORY_KEYS`, the last
    ``max_failures`` failures, cut to ``max_chars`` characters (with a marker) if still longer."""
    shown: dict[str, Any] = {}
    for k in MEMORY_KEYS:
        if k in view:
            shown[k] = view[k]
    if isinstance(shown.get("failures"), list):
        shown["failures"] = shown["failures"][-max_failures:]
    text = json.dumps(shown, default=str, ensure_ascii=False)
    if len(text) > max_chars:
        text = text[:max_chars] + " ...[memory view truncated]"
    return text


def failure_note(view: dict[str, Any]) -> str:
    """A replanning instruction built from the latest failure in the view, or ``""``."""
    failures = view.get("failures") or []
    if not isinstance(failures, list) or not failures:
        return ""
    last = failures[-1]
    if isinstance(last, dict):
        what = last.get("subgoal", "?")
        attempt = last.get("attempt", "?")
        reason = last.get("reason", "?")
        head = f"LAST FAILURE: subgoal {what} failed on attempt {attempt}: {reason}."
    else:
        head = f"LAST FAILURE: {last}."
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
