"""Turn a task-memory view into compact text for VLM prompts.

The input is the dict returned by ``TaskMemory.view()`` (see ``memory.task_memory.TaskMemoryV1.view``);
missing keys are treated as empty, so views of other ``TaskMemory`` implementations work too.
"""

from __future__ import annotations

from typing import Any


def format_memory_for_prompt(view: dict[str, Any]) -> str:
    """Render ``view`` as a few short lines of plain text, e.g.::

        Instruction: stack the red cube on the green cube, then the blue cube on the red cube
        Done: 1. pick up the red cube
        Remaining: 1. stack the red cube on the green cube; 2. pick up the blue cube; ...
        Current: stack the red cube on the green cube
        Recent failures:
        - stack(red,green) attempt 1 (step 140): on(red,green) is false: red is at ...
        Object facts:
        - red: knocked off green at step 312
        Lessons from earlier episodes:
        - stack: 4 of 9 attempts failed in 3 earlier episodes (grasp_slipped x4); ...
        Attempts: pick(red)=2, stack(red,green)=1

    Sections with nothing to say are left out (except Done/Remaining, shown as ``(none)``).

    Raises:
        TypeError: if ``view`` is not a dict.
    """
    if not isinstance(view, dict):
        raise TypeError(f"format_memory_for_prompt needs the dict from TaskMemory.view(), got {type(view).__name__}")
    lines: list[str] = []
    if view.get("instruction"):
        lines.append(f"Instruction: {view['instruction']}")
    for key, title in (("done", "Done"), ("remaining", "Remaining")):
        items = list(view.get(key) or [])
        lines.append(f"{title}: " + ("; ".join(f"{i}. {t}" for i, t in enumerate(items, 1)) if items else "(none)"))
    if view.get("current"):
        lines.append(f"Current: {view['current']}")
    failures = view.get("failures") or []
    if failures:
        lines.append("Recent failures:")
        for f in failures:
            where = f" (step {f['step']})" if "step" in f else ""
            cause = f", {f['cause']}" if f.get("cause") and f["cause"] != "unknown" else ""
            lines.append(f"- {f.get('subgoal', '?')} attempt {f.get('attempt', '?')}{where}{cause}: {f.get('reason', '')}")
    facts = view.get("facts") or {}
    if facts:
        lines.append("Object facts:")
        for obj, fs in facts.items():
            for fact in fs if isinstance(fs, list) else [fs]:
                lines.append(f"- {obj}: {fact}")
    hints = view.get("hints") or []
    if hints:
        lines.append("Lessons from earlier episodes:")
        lines.extend(f"- {h}" for h in hints)
    attempts = view.get("attempts") or {}
    if attempts:
        lines.append("Attempts: " + ", ".join(f"{sig}={n}" for sig, n in attempts.items()))
    return "\n".join(lines)
