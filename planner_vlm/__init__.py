"""Planners, verifiers and goal producers: oracle (privileged, symbolic), instruction (flat), VLM and learned.

Kept light on purpose: importing ``planner_vlm`` loads nothing heavy. The oracle classes are
exported lazily; import VLM backends from their own modules.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "InstructionPlanner": "planner_vlm.instruction_planner",
    "OraclePlanner": "planner_vlm.oracle_planner",
    "OracleTaskSuccessVerifier": "planner_vlm.oracle_task_verifier",
    "OracleVerifier": "planner_vlm.oracle_verifier",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'planner_vlm' has no attribute {name!r}")
