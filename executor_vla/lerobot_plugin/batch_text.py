"""The conditioning text of a LeRobot batch, shared by tandem's LeRobot policy types.

A tandem dataset stores each frame's subgoal text as a LeRobot task (``subgoal.task_index`` indexes
``meta/tasks.parquet``, as ``task_index`` does for the episode's instruction; :mod:`tandem.core.dataset_schema`).
LeRobot's ``make_policy`` hands the policy the dataset's metadata (``dataset_meta``), whose ``tasks`` table maps
the indices back to text. At inference a batch may carry the texts themselves (``subgoal.text``, B strings).
"""

from __future__ import annotations

from typing import Any

from tandem.core.errors import DatasetSchemaError

#: Batch key of the conditioning texts themselves (a list of B strings), accepted at inference.
TEXT_KEY = "subgoal.text"


def tasks_table(dataset_meta: Any) -> dict[int, str]:
    """``{task index: text}`` from a ``LeRobotDatasetMetadata`` (its ``tasks`` DataFrame is indexed by the text, with
    a ``task_index`` column); ``{}`` without metadata or tasks."""
    tasks = getattr(dataset_meta, "tasks", None) if dataset_meta is not None else None
    if tasks is None:
        return {}
    return {int(i): str(t) for t, i in zip(tasks.index, tasks["task_index"])}


def batch_texts(batch: dict[str, Any], index_key: str, texts: dict[int, str]) -> list[str]:
    """The B conditioning texts of ``batch``: ``batch["subgoal.text"]`` if present, else ``texts[batch[index_key]]``.

    Args:
        batch: a LeRobot batch; ``batch[index_key]`` is an integer tensor ``(B,)`` or ``(B, 1)``.
        index_key: ``"subgoal.task_index"`` (subgoal conditioning) or ``"task_index"`` (the instruction).
        texts: the dataset's tasks table (:func:`tasks_table`).

    Raises:
        DatasetSchemaError: the batch has neither key, or an index the tasks table lacks (the first few named).
    """
    if TEXT_KEY in batch:
        return [str(t) for t in batch[TEXT_KEY]]
    if index_key not in batch:
        raise DatasetSchemaError(f"batch has no {index_key!r} (nor {TEXT_KEY} / subgoal.text_embedding) to take the "
                                 "conditioning text from")
    idx = [int(i) for i in batch[index_key].reshape(-1).tolist()]
    unknown = [i for i in idx if i not in texts]
    if unknown:
        raise DatasetSchemaError(f"text indices {unknown[:5]} not in the dataset's tasks table "
                                 f"({len(texts)} tasks; was the policy built without its dataset's metadata?)")
    return [texts[i] for i in idx]
