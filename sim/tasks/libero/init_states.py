"""LIBERO's official init states, read without torch.

Each task's ``init_files/<suite>/<task>.pruned_init`` is a ``torch.save`` zip archive whose only record,
``archive/data.pkl``, pickles a numpy array ``float64 (50, S)``: the flattened MuJoCo state (time, qpos, qvel) of
the 50 init states that LIBERO's protocol evaluates on. The pickle holds only numpy objects, so it is unpickled
here with an unpickler that admits numpy's array reconstruction and nothing else.
"""

from __future__ import annotations

import functools
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np

from tandem.core.errors import ConfigError

#: The globals a numpy array's pickle may name (numpy 1.x and 2.x module paths).
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),  # how Python 2-compatible pickles spell the array's raw bytes
}


class _NumpyOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle's signature
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array part")
        return super().find_class(module, name)


@functools.cache
def official_init_states(path: Path) -> np.ndarray:
    """The init states in ``path`` (a ``.pruned_init`` file): ``float64 (N, S)``, read once per path.

    Raises:
        ConfigError: the file is missing or is not a pickled 2-D numpy array (names the file).
    """
    try:
        with zipfile.ZipFile(path) as z:
            record = next(n for n in z.namelist() if n.endswith("data.pkl"))
            states = _NumpyOnly(io.BytesIO(z.read(record))).load()
    except (OSError, StopIteration, zipfile.BadZipFile, pickle.UnpicklingError, EOFError) as e:
        raise ConfigError(f"LIBERO init states {path}: cannot be read ({e})") from e
    if not isinstance(states, np.ndarray) or states.ndim != 2:
        raise ConfigError(f"LIBERO init states {path}: expected a 2-D array, got {type(states).__name__}")
    return states.astype(np.float64, copy=False)
