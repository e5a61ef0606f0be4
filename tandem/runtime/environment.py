"""The process environment every tandem process needs, defined once: entry points, evaluation workers (process pool
and Ray), benchmarks and tests all apply :func:`prepare_runtime` or pass on :func:`runtime_env`.

* ``MUJOCO_GL=egl``: headless rendering (Mesa llvmpipe works without a display); ``PYOPENGL_PLATFORM`` follows it;
* ``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``: never reach the Hugging Face hub (models load by path);
* ``TOKENIZERS_PARALLELISM=false``: no tokenizer thread pools forked into workers.

Values already set in the environment win (``os.environ.setdefault``), so ``MUJOCO_GL=osmesa tandem-demo`` works.
"""

from __future__ import annotations

import logging
import os

#: Variable -> default value. ``PYOPENGL_PLATFORM`` has no fixed default: it follows ``MUJOCO_GL``.
RUNTIME_ENV_DEFAULTS: dict[str, str] = {
    "MUJOCO_GL": "egl",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def runtime_env() -> dict[str, str]:
    """The runtime variables as this process has them (its own values, else the defaults): what a child process
    (a Ray worker, a subprocess) must be given."""
    env = {k: os.environ.get(k, v) for k, v in RUNTIME_ENV_DEFAULTS.items()}
    env["PYOPENGL_PLATFORM"] = os.environ.get("PYOPENGL_PLATFORM", env["MUJOCO_GL"])
    return env


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


def prepare_runtime() -> None:
    """Set the runtime variables that are not set yet (call before robosuite or Hugging Face libraries are
    imported) and keep robosuite's start-up warnings about optional packages (robosuite_models, mink, a private
    macro file) out of the output: only its errors pass."""
    for k, v in runtime_env().items():
        os.environ.setdefault(k, v)
    rs_logger = logging.getLogger("robosuite_logs")
    if _errors_only not in rs_logger.filters:
        rs_logger.addFilter(_errors_only)
    rs_logger.propagate = False


__all__ = ["RUNTIME_ENV_DEFAULTS", "prepare_runtime", "runtime_env"]
