"""Output folders of the commands that write: checked before any work, created once the input is validated, and
removed again when the command then refuses its input (bad input writes nothing).

One mechanism for every command (``tandem-demo``, ``tandem-eval`` and its report, ``tandem-train``,
``tandem-collect``, ``tandem-replay``): :func:`check_output_folder` first, :func:`create_output_folder` when the
input is known good, :func:`remove_created_output_folders` where the command refuses it
(``tandem.cli.common.fail``). This module imports nothing from the project but its errors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tandem.core.errors import OutputFolderError

#: The topmost folder :func:`create_output_folder` had to create for each call in this process.
_CREATED: list[Path] = []


def _missing_chain(path: Path) -> tuple[Path, Path | None]:
    """``(nearest existing ancestor or path itself, topmost missing folder or None)`` of an absolute ``path``."""
    missing = None
    while not path.exists() and path != path.parent:
        missing, path = path, path.parent
    return path, missing


def _named(key: str | None) -> str:
    """The start of a message about the output folder of config key ``key`` (``"out_dir: output folder"``)."""
    return f"{key}: output folder" if key else "output folder"


def check_output_folder(path: str | Path, key: str | None = None) -> Path:
    """``path`` as a Path, once it is known that it can be created and written; creates nothing.

    Args:
        path: the folder.
        key: the config key or option that named it (``out_dir``, ``--out``), for the message; None: none named.

    Raises:
        OutputFolderError: ``path`` or an ancestor is a file, or the nearest existing ancestor is not writable
            (permissions, a read-only file system); one line, starting with ``key``.
    """
    p = Path(path).expanduser()
    there, _ = _missing_chain(p.absolute())
    if not there.is_dir():
        what = "is a file" if there == p.absolute() else f"cannot be created: {there} is a file"
        raise OutputFolderError(f"{_named(key)} {p} {what}, not a folder")
    if not os.access(there, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{_named(key)} {p} cannot be written: {there} is not writable (permissions or a "
                                "read-only file system)")
    return p


def create_output_folder(path: str | Path, key: str | None = None) -> Path:
    """Create the output folder ``path`` (checked as by :func:`check_output_folder`) and try a file in it; a folder
    it had to create is remembered for :func:`remove_created_output_folders`.

    Raises:
        OutputFolderError: it cannot be created, or a file cannot be written in it (naming ``key``).
    """
    p = check_output_folder(path, key)
    _, missing = _missing_chain(p.absolute())
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as e:
        raise OutputFolderError(f"{_named(key)} {p} cannot be written: {e.strerror or e}") from e
    if missing is not None:
        _CREATED.append(missing)
    return p


def remove_created_output_folders() -> None:
    """Remove, with what they hold, the folders :func:`create_output_folder` created in this process."""
    while _CREATED:
        shutil.rmtree(_CREATED.pop(), ignore_errors=True)


__all__ = ["check_output_folder", "create_output_folder", "remove_created_output_folders"]
