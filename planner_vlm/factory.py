"""Build the VLM planner / verifier and their client from a Hydra config (``configs/planner/vlm.yaml``,
``configs/verifier/vlm.yaml``), so the backend is chosen by config, never by code changes.

Config keys (all optional but those of the chosen backend):

* ``backend``: ``openai`` | ``transformers`` | ``scripted``;
* openai: ``base_url``, ``model``, ``api_key_env``, ``timeout_s``, ``max_retries``, ``backoff_s``,
  ``use_json_schema``;
* transformers: ``model_path``, ``device``, ``dtype``;
* scripted: ``replies`` (list of strings, replayed in order; the last repeats);
* both: ``temperature``, ``max_new_tokens``, ``prompt_version``, ``max_repairs``, ``cameras``, ``memory_tokens``;
* planner only: ``geometry`` (``image`` | ``learned``: the learned models' 3-D traces | ``pointing``: the model's
  points lifted with depth, :mod:`planner_vlm.pointing`; both built by the registry and passed in as ``geometry=``;
  see :mod:`planner_vlm.vlm_planner`; ``pointing`` with the default ``prompt_version`` v2 uses ``plan_pointing``),
  ``trace_camera``, ``canonical_text``, ``point_frame`` (``auto``: the frame the backend declares
  for its model, see :mod:`planner_vlm.point_frames`; or ``pixels``, ``resized_pixels``, ``grid1000``, ``unit``)
  and ``point_frame_resize`` (``{factor, min_pixels, max_pixels}`` of the server's processor, for
  ``resized_pixels``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner_vlm.clients.base import VLMClient
from planner_vlm.point_frames import point_frame_from_config
from planner_vlm.prompting import PLAN_MEMORY_TOKENS, VERIFY_MEMORY_TOKENS
from planner_vlm.vlm_planner import GEOMETRIES, SubgoalGeometry, VLMPlanner
from planner_vlm.vlm_verifier import VLMVerifier
from tandem.core.errors import ConfigError, UnknownNameError
from tandem.core.types import TaskSpec

BACKENDS = ("openai", "transformers", "scripted")

#: Loaded transformers clients by (model_path, device, dtype, max_new_tokens, temperature): a planner and a
#: verifier configured with the same model share one copy of the weights.
_TRANSFORMERS_CLIENTS: dict[tuple, VLMClient] = {}


def _to_dict(cfg: Any) -> dict[str, Any]:
    if cfg is None:
        return {}
    try:  # OmegaConf DictConfig -> plain dict, interpolations resolved
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            return dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise ConfigError(f"expected a mapping config for the VLM planner/verifier, got {type(cfg).__name__}")


def make_vlm_client(cfg: Any) -> VLMClient:
    """The :class:`~planner_vlm.clients.base.VLMClient` named by ``cfg["backend"]``.

    Raises:
        UnknownNameError: for an unknown backend.
        ConfigError: for a missing ``base_url``/``model`` (openai) or ``model_path`` (transformers).
        VLMClientError: if a transformers model cannot be loaded.
    """
    c = _to_dict(cfg)
    backend = c.get("backend", "openai")
    temperature = float(c.get("temperature", 0.0) or 0.0)
    max_new_tokens = int(c.get("max_new_tokens", 512) or 512)
    if backend == "openai":
        from planner_vlm.clients.openai_client import OpenAICompatibleClient

        return OpenAICompatibleClient(
            base_url=c.get("base_url") or "",
            model=c.get("model") or "",
            api_key_env=c.get("api_key_env", "OPENAI_API_KEY"),
            timeout_s=float(c.get("timeout_s", 60.0)),
            max_retries=int(c.get("max_retries", 3)),
            backoff_s=float(c.get("backoff_s", 1.0)),
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            use_json_schema=bool(c.get("use_json_schema", True)),
        )
    if backend == "transformers":
        from planner_vlm.clients.transformers_client import TransformersVLMClient

        if not c.get("model_path"):
            raise ConfigError("planner.model_path is required for backend=transformers (a local model directory)")
        key = (str(c["model_path"]), str(c.get("device", "auto")), str(c.get("dtype", "auto")))
        if key not in _TRANSFORMERS_CLIENTS:
            _TRANSFORMERS_CLIENTS[key] = TransformersVLMClient(
                key[0], device=key[1], dtype=key[2], max_new_tokens=max_new_tokens, temperature=temperature,
                seed=int(c.get("seed", 0) or 0),
            )
        return _TRANSFORMERS_CLIENTS[key]
    if backend == "scripted":
        from planner_vlm.clients.scripted_client import ScriptedVLMClient

        replies = c.get("replies") or []
        if not replies:
            raise ConfigError("backend=scripted needs a non-empty 'replies' list")
        return ScriptedVLMClient([str(r) for r in replies], repeat_last=True)
    raise UnknownNameError("VLM backend", str(backend), BACKENDS)


def make_vlm_planner(cfg: Any, task: TaskSpec | None = None, client: VLMClient | None = None,
                     grounder: Any = None, geometry: SubgoalGeometry | None = None) -> VLMPlanner:
    """A :class:`~planner_vlm.vlm_planner.VLMPlanner` from ``cfg`` (``client`` overrides the configured backend;
    ``grounder``: a learned instruction grounder its first plan's goals are checked against; ``geometry``: the
    learned geometry that ``cfg["geometry"] == "learned"`` needs, e.g. a
    :class:`~planner_vlm.learned.geometry.LearnedGeometry`).

    Raises:
        ConfigError: ``geometry`` not one of :data:`~planner_vlm.vlm_planner.GEOMETRIES` (named), ``learned``
            without a ``geometry`` object, or a ``geometry`` object with ``image``; and as :func:`make_vlm_client`.
    """
    c = _to_dict(cfg)
    mode = c.get("geometry", "image")
    if mode not in GEOMETRIES:
        raise ConfigError(f"planner.geometry must be {' or '.join(GEOMETRIES)}, got {mode!r}")
    if (mode != "image") != (geometry is not None):
        needs = {"learned": "the learned state and trace models", "pointing": "the task's pointing geometry and the "
                 "camera's calibration"}
        raise ConfigError(f"planner.geometry={mode} " + (f"needs {needs.get(mode)} (the registry builds them)"
                                                         if geometry is None else
                                                         "takes no geometry (set planner.geometry=learned or pointing)"))
    prompt_version = str(c.get("prompt_version", "v2"))
    if mode == "pointing" and prompt_version == "v2":  # the default prompt asks for a path; pointing asks for points
        prompt_version = "pointing"
    client = client if client is not None else make_vlm_client(c)
    return VLMPlanner(
        client,
        task,
        point_frame=point_frame_from_config(c.get("point_frame"), client.point_frame, c.get("point_frame_resize")),
        prompt_version=prompt_version,
        trace_camera=str(c.get("trace_camera", "agentview")),
        cameras=c.get("cameras") or None,
        max_repairs=int(c.get("max_repairs", 1)),
        canonical_text=bool(c.get("canonical_text", True)),
        use_schema=bool(c.get("use_json_schema", True)),
        max_new_tokens=_opt_int(c.get("max_new_tokens")),
        temperature=_opt_float(c.get("temperature")),
        memory_tokens=int(c.get("memory_tokens") or PLAN_MEMORY_TOKENS),
        grounder=grounder,
        geometry=geometry,
    )


def make_vlm_verifier(cfg: Any, task: TaskSpec | None = None, client: VLMClient | None = None) -> VLMVerifier:
    """A :class:`~planner_vlm.vlm_verifier.VLMVerifier` from ``cfg``; call ``reset(task, memory)`` per episode."""
    c = _to_dict(cfg)
    return VLMVerifier(
        client if client is not None else make_vlm_client(c),
        task,
        cameras=c.get("cameras") or None,
        prompt_version=str(c.get("prompt_version", "v2")),
        max_repairs=int(c.get("max_repairs", 1)),
        use_schema=bool(c.get("use_json_schema", True)),
        max_new_tokens=_opt_int(c.get("max_new_tokens")),
        temperature=_opt_float(c.get("temperature")),
        memory_tokens=int(c.get("memory_tokens") or VERIFY_MEMORY_TOKENS),
    )


def _opt_int(x: Any) -> int | None:
    return None if x is None else int(x)


def _opt_float(x: Any) -> float | None:
    return None if x is None else float(x)
