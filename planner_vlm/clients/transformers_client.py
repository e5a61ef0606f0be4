"""In-process backend: any image-text-to-text model from a local directory, through transformers.

Loading follows the transformers documentation for image-text-to-text models
(https://huggingface.co/docs/transformers/tasks/image_text_to_text): ``AutoProcessor`` and
``AutoModelForImageTextToText``, both with ``local_files_only=True`` (never a hub download).
The prompt is built with the processor's own chat template (``apply_chat_template(...,
tokenize=False, add_generation_prompt=True)``) with one ``{"type": "image"}`` placeholder per image,
then ``processor(text=..., images=[PIL images])``, ``model.generate`` and decoding of the new tokens
only. Tested with Qwen2-VL / Qwen2.5-VL-family checkpoints.

The JSON schema passed to :meth:`TransformersVLMClient.generate` is not enforced (no constrained
decoding); the prompt states it and the strict parser checks the reply.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from planner_vlm.clients.base import ChatMessage, ImagePart, VLMClientError, VLMReply
from planner_vlm.point_frames import PointFrame, default_point_frame
from tandem.core.errors import ConfigError

_DTYPES = ("auto", "float32", "float16", "bfloat16")


def choose_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` if available, else ``"mps"`` if available, else ``"cpu"``; other values pass through.

    Raises:
        ConfigError: if ``device`` names cuda/mps and it is not available.
    """
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"planner.device={device!r} but CUDA is not available; use device=auto or cpu")
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError("planner.device='mps' but MPS is not available; use device=auto or cpu")
    return device


def choose_dtype(dtype: str, device: str) -> Any:
    """``"auto"`` -> bfloat16 on a CUDA device that supports it, float16 on other CUDA/MPS, float32 on CPU.

    Raises:
        ConfigError: for a dtype name not in ``auto, float32, float16, bfloat16``.
    """
    import torch

    if dtype not in _DTYPES:
        raise ConfigError(f"planner.dtype={dtype!r}; expected one of {', '.join(_DTYPES)}")
    if dtype != "auto":
        return getattr(torch, dtype)
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device == "mps":
        return torch.float16
    return torch.float32


class TransformersVLMClient:
    """A :class:`~planner_vlm.clients.base.VLMClient` running a local transformers VLM.

    Args:
        model_path: directory with ``config.json``, weights and processor files (e.g. a downloaded
            ``Qwen/Qwen2.5-VL-3B-Instruct`` snapshot, or ``scripts/make_tiny_vlm.py`` output).
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``.
        dtype: ``"auto"``, ``"float32"``, ``"float16"``, ``"bfloat16"``.
        max_new_tokens: default generation length (tokens).
        temperature: 0 -> greedy decoding; > 0 -> sampling at that temperature.
        seed: torch seed set before each sampled generation (reproducible sampling).

    Raises:
        ConfigError: if ``model_path`` is not a directory with a ``config.json``, or device/dtype are bad.
        VLMClientError: if transformers cannot load the model or processor from it.
    """

    backend = "transformers"

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "auto",
        dtype: str = "auto",
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
    ):
        path = Path(str(model_path)).expanduser()
        if not str(model_path) or not (path / "config.json").is_file():
            raise ConfigError(
                f"planner.model_path={str(model_path)!r} is not a model directory (no config.json); "
                "download a model (e.g. `hf download Qwen/Qwen2.5-VL-3B-Instruct --local-dir <dir>`) or "
                "make a tiny random one with `python scripts/make_tiny_vlm.py --out <dir>`"
            )
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.model_path = path
        self.device = choose_device(device)
        self.dtype = choose_dtype(dtype, self.device)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self._torch = torch
        try:
            self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
            self.model = AutoModelForImageTextToText.from_pretrained(str(path), dtype=self.dtype, local_files_only=True)
        except Exception as e:  # transformers raises many types (OSError, ValueError, KeyError)
            raise VLMClientError("transformers", f"cannot load an image-text-to-text model from {path}: {e}") from e
        self.model.to(self.device)
        self.model.eval()
        self.model_name = getattr(self.model.config, "_name_or_path", str(path)) or str(path)
        self.point_frame = processor_point_frame(getattr(self.model.config, "model_type", ""), self.processor)

    def build_prompt(self, messages: list[ChatMessage]) -> tuple[str, list[Any]]:
        """Render ``messages`` with the processor's chat template.

        Returns:
            ``(prompt text, PIL images in order)``. If the template rejects a ``system`` role, the
            system text is prepended to the first user message instead.

        Raises:
            VLMClientError: if the processor has no usable chat template.
        """
        from PIL import Image

        images: list[Any] = []
        conv: list[dict[str, Any]] = []
        for m in messages:
            content: list[dict[str, Any]] = []
            for p in m.parts:
                if isinstance(p, ImagePart):
                    content.append({"type": "image"})
                    images.append(Image.fromarray(p.image, mode="RGB"))
                else:
                    content.append({"type": "text", "text": p.text})
            conv.append({"role": m.role, "content": content})
        try:
            text = self.processor.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        except Exception as first:
            merged = _merge_system_into_user(conv)
            try:
                text = self.processor.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
            except Exception as e:
                raise VLMClientError(
                    "transformers", f"the processor's chat template failed: {first}; without system role: {e}"
                ) from e
        return text, images

    def generate(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        max_new_tokens: int | None = None,
        temperature: float | None = None,
    ) -> VLMReply:
        """Run ``model.generate`` on the rendered conversation and decode the new tokens.

        ``json_schema`` is not enforced here (see the module docstring).

        Raises:
            VLMClientError: if the processor or generate fails (e.g. out of memory).
        """
        torch = self._torch
        t0 = time.perf_counter()
        text, images = self.build_prompt(messages)
        temp = self.temperature if temperature is None else float(temperature)
        n_new = self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        try:
            inputs = self.processor(text=[text], images=images or None, return_tensors="pt")
            inputs = inputs.to(self.device)
            for k, v in inputs.items():  # pixel values in the model's dtype (bf16/fp16 on accelerators)
                if torch.is_tensor(v) and torch.is_floating_point(v):
                    inputs[k] = v.to(self.dtype)
            gen_kwargs: dict[str, Any] = {"max_new_tokens": n_new, "do_sample": temp > 0}
            if temp > 0:
                gen_kwargs["temperature"] = temp
                torch.manual_seed(self.seed)
            tok = getattr(self.processor, "tokenizer", None)
            if tok is not None and tok.pad_token_id is not None:
                gen_kwargs["pad_token_id"] = tok.pad_token_id
            with torch.inference_mode():
                out = self.model.generate(**inputs, **gen_kwargs)
            n_in = inputs["input_ids"].shape[1]
            new_tokens = out[:, n_in:]
            reply = self.processor.batch_decode(new_tokens, skip_special_tokens=True)[0]
        except VLMClientError:
            raise
        except Exception as e:
            raise VLMClientError("transformers", f"generation failed: {type(e).__name__}: {e}") from e
        return VLMReply(
            text=reply,
            latency_s=time.perf_counter() - t0,
            meta={
                "backend": "transformers",
                "model": str(self.model_name),
                "device": self.device,
                "dtype": str(self.dtype).replace("torch.", ""),
                "prompt_tokens": int(n_in),
                "new_tokens": int(new_tokens.shape[1]),
                "schema_enforced": False,
            },
        )


def processor_point_frame(model_type: str, processor: Any) -> PointFrame:
    """The point frame of a loaded model: :func:`~planner_vlm.point_frames.default_point_frame` of its
    ``model_type``; for ``resized_pixels`` (Qwen2.5-VL) the resize rule is read from its image processor
    (``patch_size * merge_size``, ``size["shortest_edge"]`` / ``["longest_edge"]``, or ``min_pixels`` / ``max_pixels``)
    when it has them, so the frame is the exact image the model was fed."""
    frame = default_point_frame(model_type)
    if frame.kind != "resized_pixels":
        return frame
    ip = getattr(processor, "image_processor", None)
    size = getattr(ip, "size", None) or {}
    size = size if isinstance(size, dict) else {}
    patch, merge = getattr(ip, "patch_size", None), getattr(ip, "merge_size", None)
    lo = size.get("shortest_edge") or getattr(ip, "min_pixels", None)
    hi = size.get("longest_edge") or getattr(ip, "max_pixels", None)
    return PointFrame("resized_pixels", factor=int(patch * merge) if patch and merge else frame.factor,
                      min_pixels=int(lo) if lo else frame.min_pixels, max_pixels=int(hi) if hi else frame.max_pixels)


def _merge_system_into_user(conv: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system_text = "\n\n".join(
        c["text"] for m in conv if m["role"] == "system" for c in m["content"] if c["type"] == "text"
    )
    rest = [dict(m, content=list(m["content"])) for m in conv if m["role"] != "system"]
    if system_text and rest and rest[0]["role"] == "user":
        rest[0]["content"].insert(0, {"type": "text", "text": system_text + "\n\n"})
    return rest
