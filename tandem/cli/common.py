"""Shared set-up of tandem's Hydra entry points."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tandem.runtime.environment import prepare_runtime

#: The Hydra config tree shipped with the repository (``configs/``).
CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "configs")


def to_container(cfg: Any) -> Any:
    """OmegaConf config -> plain JSON-safe dict (resolved)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def fail(error: BaseException) -> None:
    """Print one clear line naming the problem and exit with status 2 (tandem errors) or 1 (anything else)."""
    from tandem.core.errors import TandemError

    if isinstance(error, TandemError):
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    raise error


def hydra_main(config_name: str) -> Callable:
    """``hydra.main`` bound to the repository's ``configs/`` folder."""
    import hydra

    return hydra.main(config_path=CONFIG_DIR, config_name=config_name, version_base="1.3")


__all__ = ["CONFIG_DIR", "fail", "hydra_main", "prepare_runtime", "to_container"]
