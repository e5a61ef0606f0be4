"""The text of a checkpoint's ``config.json``, written by both executor families (:mod:`executor_vla.checkpoint`,
:class:`executor_vla.track_policy.TrackExecutor`); read back with :func:`executor_vla.loading.read_checkpoint_config`."""

from __future__ import annotations

import json
import re
from typing import Any

#: A list of numbers only as ``json.dumps(indent=...)`` lays it out, one per line (a JSON string never holds a raw
#: newline, so this cannot match inside one).
_NUMBER_LIST = re.compile(r"\[(\n[-+0-9.eE,\s]*)\]")


def config_text(config: dict[str, Any]) -> str:
    """The text of a checkpoint's ``config.json``: indented JSON, with each list of numbers on one line (a
    checkpoint's training seeds, ``extra.dataset.seeds``, run to hundreds of integers; one per line buried the
    settings), so ``json.loads(config_text(c)) == c``.

    Raises:
        TypeError: a value JSON cannot hold (``json.dumps``'s error, naming its type).
    """
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",") if x.strip()) + "]",
                            json.dumps(config, indent=2))
