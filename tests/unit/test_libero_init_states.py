"""LIBERO's official init states are read without torch, and nothing but a numpy array is unpickled."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sim.tasks.libero.init_states import official_init_states
from tandem.core.errors import ConfigError


def _torch_style_archive(path: Path, obj: object, protocol: int = 2) -> Path:
    """A zip laid out as ``torch.save`` lays one out (``archive/data.pkl`` + ``archive/version``)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(obj, protocol=protocol))
        z.writestr("archive/version", "3\n")
    return path


@pytest.mark.parametrize("protocol", [2, 4])
def test_reads_the_array_of_a_torch_style_archive(tmp_path, protocol):
    states = np.arange(2 * 5, dtype=np.float64).reshape(2, 5)
    path = _torch_style_archive(tmp_path / f"t{protocol}.pruned_init", states, protocol)
    np.testing.assert_array_equal(official_init_states(path), states)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_refuses_a_pickle_that_names_anything_but_numpy(tmp_path):
    path = _torch_style_archive(tmp_path / "evil.pruned_init", _Evil())
    with pytest.raises(ConfigError, match="os|posix|system"):
        official_init_states(path)


def test_a_missing_or_bad_file_is_a_one_line_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        official_init_states(tmp_path / "absent.pruned_init")
    bad = tmp_path / "bad.pruned_init"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="cannot be read"):
        official_init_states(bad)
    one_d = _torch_style_archive(tmp_path / "1d.pruned_init", np.zeros(3))
    with pytest.raises(ConfigError, match="2-D"):
        official_init_states(one_d)
