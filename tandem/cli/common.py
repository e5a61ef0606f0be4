"""Shared set-up of tandem's Hydra entry points."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The Hydra config tree shipped with the repository (``configs/``).
CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "configs")


def prepare_runtime() -> None:
    """Defaults every entry point needs before robosuite/HF are imported.

    Headless EGL rendering (``MUJOCO_GL=egl``), no hub access (``HF_HUB_OFFLINE=1``), and robosuite's
    start-up warnings about optional packages (robosuite_models, mink) silenced.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # robosuite configures this logger at import and warns about optional packages we do not use
    # (robosuite_models, mink, a private macro file); keep its errors only.
    rs_logger = logging.getLogger("robosuite_logs")
    rs_logger.addFilter(lambda record: record.levelno >= logging.ERROR)
    rs_logger.propagate = False


def to_container(cfg: Any) -> Any:
    """OmegaConf config -> plain JSON-safe dict (resolved)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def fail(error: BaseException) -> None:
    """Print one clear line naming the problem and exit with status 2 (tandem errors) or 1 (anything else)."""
    from tandem.errors import TandemError

    if isinstance(error, TandemError):
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    raise error


def hydra_main(config_name: str) -> Callable:
    """``hydra.main`` bound to the repository's ``configs/`` folder."""
    import hydra

    return hydra.main(config_path=CONFIG_DIR, config_name=config_name, version_base="1.3")
