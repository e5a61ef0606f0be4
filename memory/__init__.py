"""Structured task memory: typed records, SQLite persistence, bounded views, lessons across episodes, replay.

* :mod:`memory.records`: the typed record model (plan, replan, attempt, verdict, failure with cause, object fact);
* :mod:`memory.task_memory`: ``TaskMemoryV1``, the ``tandem.core.protocols.TaskMemory`` implementation;
* :mod:`memory.store`: ``MemoryStore``, one SQLite database per run directory;
* ``MemoryView`` (defined in :mod:`tandem.core.memory_view`, so that planners read it too): the bounded view of an
  episode, the one renderer of memory for prompts (``to_text``) and learned features (``features``);
* :mod:`memory.failures`: failure cause categories from verdicts;
* :mod:`memory.lessons`: statistics across episodes, retry policies and planner hints;
* :mod:`memory.replay`: timeline table and rerun.io recording of a stored episode.
"""

from memory.records import FailureCause
from memory.store import MemorySchemaError, MemoryStore, MemoryStoreError
from memory.task_memory import MemoryFileError, TaskMemoryV1
from tandem.core.memory_view import MemoryView

__all__ = ["FailureCause", "MemoryFileError", "MemorySchemaError", "MemoryStore", "MemoryStoreError", "MemoryView",
           "TaskMemoryV1"]
