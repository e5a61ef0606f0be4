"""Structured task memory: typed records, SQLite persistence, bounded views, lessons across episodes, replay.

* :mod:`memory.records`: the typed record model (plan, replan, attempt, verdict, failure with cause, object fact);
* :mod:`memory.task_memory`: ``TaskMemoryV1``, the ``tandem.core.protocols.TaskMemory`` implementation;
* :mod:`memory.store`: ``MemoryStore``, one SQLite database per run directory;
* :mod:`memory.memory_view`: ``MemoryView``, the token-budgeted summary for prompts and features;
* :mod:`memory.failures`: failure cause categories from verdicts;
* :mod:`memory.lessons`: statistics across episodes, retry policies and planner hints;
* :mod:`memory.replay`: timeline table and rerun.io recording of a stored episode;
* :mod:`memory.views`: the version-1 prompt text of a view dict.
"""

from memory.memory_view import MemoryView
from memory.records import FailureCause
from memory.store import MemorySchemaError, MemoryStore, MemoryStoreError
from memory.task_memory import MemoryFileError, TaskMemoryV1
from memory.views import format_memory_for_prompt

__all__ = ["FailureCause", "MemoryFileError", "MemorySchemaError", "MemoryStore", "MemoryStoreError", "MemoryView",
           "TaskMemoryV1", "format_memory_for_prompt"]
