"""Structured task memory (done / remaining, attempts, failures, object facts, event log) and prompt views."""

from memory.task_memory import MemoryFileError, TaskMemoryV1
from memory.views import format_memory_for_prompt

__all__ = ["MemoryFileError", "TaskMemoryV1", "format_memory_for_prompt"]
