"""Training of the learned instruction grounder (:mod:`planner_vlm.learned.grounder`) on one CPU core.

Data: generated, never the evaluation files (``benchmarks/data/grounding_*``). Phrasing generators (the
:class:`Phrasing` protocol: ``sample_goals``, ``phrase``, ``negatives``; the shipped grounders train on
:class:`planner_vlm.learned.grounder_corpora.Mixture`, the project grammar's split ``"train"`` and several
independent hands) give, with fixed seeds:

* paraphrases of goal lists drawn by ``sample_goals`` (the targets: the goals in the order they must be achieved,
  bottom first for ``ordered_by_support`` vocabularies, and the ``ordered`` flag the words gave);
* literal requests for *impossible* goals (:func:`impossible_examples`, this module's own few templates, since
  ``phrase`` refuses impossible goals), with their goals, so that "stack the red cube on the red cube" grounds to
  ``on(red,red)`` and is refused by :meth:`TaskVocabulary.impossibility` naming that goal, not guessed into a
  possible goal;
* negatives (``out_of_vocabulary``, ``missing_skill``, ``impossible``, ``empty``): the sentence refusal target
  (every negative and impossible request: 1; paraphrases: 0); the per-token fault target for the words of an
  ``out_of_vocabulary`` or ``missing_skill`` negative that no train paraphrase uses (the word at fault).

The texts are encoded once (MiniLM, batched, cached per text), the head is trained with Adam (cross-entropy per slot
and per token, binary cross-entropy for ``ordered`` and ``refuse``) until the CPU-time budget (:data:`cpu_clock`), then the refusal
thresholds are fitted on a validation draw of the train split made with other seeds
(:func:`fit_thresholds`: each threshold in turn maximises ``grounded right - grounded wrong - negatives executed``,
the middle of the best interval).

Seeds: train draws from ``seed`` (0 by default), validation from ``seed + 500`` (the project's validation block);
the held-out evaluation (``benchmarks/grounding.py``) draws split ``"heldout"`` from 1000.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from planner_vlm.learned.grounder import (
    FAULT_CLASSES,
    Featurizer,
    GrounderConfig,
    GrounderNet,
    InstructionGrounder,
    Lexicon,
    Thresholds,
    TokenEncoder,
    split_words,
    word_kinds,
)
from tandem.core.vocabulary import TaskVocabulary, goals_equal

#: Negative kinds whose words carry the fault (a per-token target), and the fault class of each.
FAULT_KIND = {"out_of_vocabulary": 1, "missing_skill": 2}
#: Offset of the validation draw's seeds from the training seed.
VAL_SEED_OFFSET = 500
#: The clock of every training budget: CPU seconds of this process. With one torch thread that is the time of one
#: core, so a machine shared with other jobs does not shorten training (the wall clock is recorded beside it).
cpu_clock = time.process_time


class Phrasing(Protocol):
    """The generator's interface (``tandem.core.phrasing``)."""

    def sample_goals(self, vocab: TaskVocabulary, rng: np.random.Generator) -> list[str]:
        """Goals of one training example, drawn with ``rng`` from the task's vocabulary."""
        ...

    def phrase(self, vocab: TaskVocabulary, goals: Sequence[str], rng: np.random.Generator,
               split: str) -> tuple[str, bool]:
        """An instruction for ``goals`` in this phrasing, and whether it states their order."""
        ...

    def negatives(self, vocab: TaskVocabulary, rng: np.random.Generator, split: str) -> tuple[str, str]:
        """An instruction the task must refuse, and its kind (``tandem.core.phrasing.NEGATIVE_KINDS``)."""
        ...


@dataclass
class Example:
    """One generated instruction: ``goals`` (target order) and ``ordered``, or ``goals=None`` for a negative of
    ``kind``; ``faults`` maps a word at fault to its class (:data:`FAULT_CLASSES`)."""

    text: str
    goals: tuple[str, ...] | None
    ordered: bool
    kind: str
    faults: dict[str, int] = field(default_factory=dict)


def target_order(vocab: TaskVocabulary, goals: Sequence[str], ordered: bool = True,
                 text: str = "") -> tuple[str, ...]:
    """The order slots predict: bottom first with ``ordered_by_support``; the stated order when the words order the
    goals; otherwise (an unordered list) mention order: the goals whose first argument the text names, in the order
    of their first mention, then the others (``"everything except the bread"``) in the vocabulary's order."""
    if vocab.ordered_by_support:
        return vocab.canonical_order(goals)
    if ordered:
        return tuple(goals)
    words = split_words(text)
    lex = Lexicon.of(vocab)
    first: dict[str, int] = {}
    i = 0
    while i < len(words):
        for phrase, kind, idx in lex.phrases:
            if kind == "name" and tuple(words[i:i + len(phrase)]) == phrase:
                first.setdefault(lex.names[idx], i)
                i += len(phrase) - 1
                break
        i += 1
    order = {n: k for k, n in enumerate(vocab.names)}

    def key(goal: str) -> tuple[int, int]:
        arg = vocab.goal_skill_of(goal)[1][0]
        return (first.get(arg, len(words) + order.get(arg, 0)), order.get(arg, 0))

    return tuple(sorted(goals, key=key))


def arg_types(vocab: TaskVocabulary, goal_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per goal skill, the names each argument took in ``goal_lists``: ``(G, N)`` and ``(G, N + 1)`` (``none`` last)
    0/1 arrays, widened to every name of the same kind (object or place) as a name seen there."""
    names = list(vocab.names)
    n, g = len(names), len(vocab.goal_skills)
    a1, a2 = np.zeros((g, n), np.int64), np.zeros((g, n + 1), np.int64)
    objects = np.array([nm in vocab.objects for nm in names])
    for goals in goal_lists:
        for goal in goals:
            skill, args = vocab.goal_skill_of(goal)
            si = vocab.goal_skills.index(skill)
            a1[si, names.index(args[0])] = 1
            if len(args) > 1:
                a2[si, names.index(args[1])] = 1
            else:
                a2[si, n] = 1
    for row in (a1, a2):
        for si in range(g):
            for kind in (objects, ~objects):
                if row[si, :n][kind].any():
                    row[si, :n][kind] = 1
    return a1, a2


def impossible_examples(vocab: TaskVocabulary, rng: np.random.Generator, n: int) -> list[Example]:
    """``n`` literal requests for impossible goals, each with its goals (this module's own templates over the
    vocabulary's words: an object on itself, a cycle, two objects on one, one object to two places, an object on a
    place not its own). None where the vocabulary's goals cannot state such a request (a one-argument goal)."""
    skill = vocab.goal_skills[0]
    template = vocab.skills[skill]
    if "{1}" not in template:
        return []
    objs = list(vocab.objects)
    verbs = [w for w in vocab.skill_words.get(skill, (skill,)) if w not in ("build", "tower", "tidy")] or [skill]
    container = template.startswith("in")
    preps = ["in", "into", "inside"] if container else ["on", "onto", "on top of", "atop"]
    pre = ["", "", "please ", "could you ", "kindly ", "let's ", "i want you to "]
    joins = [" and ", ", then ", " and then ", ". then "]

    def c(seq):
        return seq[int(rng.integers(len(seq)))]

    def w(name):
        return "the " + c({**vocab.objects, **vocab.places}[name])

    rules = []
    if not vocab.places:
        rules = [r for r in ("distinct_args", "no_cycle", "one_per_support", "one_goal_per_object")
                 if r in vocab.rules]
    elif "own_place" in vocab.rules and len(vocab.places) > 1:
        rules = ["own_place"]
    out: list[Example] = []
    while rules and len(out) < n:
        rule = c(rules)
        a, b, cc = (objs[i] for i in rng.permutation(len(objs))[:3]) if len(objs) > 2 else (*objs[:2], objs[0])
        v, p = c(verbs), c(preps)
        if rule == "distinct_args":
            goals, text = [(a, a)], f"{v} {w(a)} {p} {w(a)}"
        elif rule == "no_cycle":
            goals, text = [(a, b), (b, a)], f"{v} {w(a)} {p} {w(b)}{c(joins)}{w(b)} {c(preps)} {w(a)}"
        elif rule == "one_per_support":
            goals, text = [(a, b), (cc, b)], f"{v} {w(a)} {p} {w(b)}{c(joins)}{w(cc)} {c(preps)} {w(b)}"
        elif rule == "one_goal_per_object":
            goals, text = [(a, b), (a, cc)], f"{v} {w(a)} {p} {w(b)}{c(joins)}{c(verbs)} {w(a)} {c(preps)} {w(cc)}"
        else:
            wrong = c([pl for pl in vocab.places if pl != vocab.own_place.get(a)])
            goals, text = [(a, wrong)], f"{v} {w(a)} {p} {w(wrong)}"
        gs = [vocab.goal(skill, g) for g in goals]
        if vocab.impossibility(gs) is None:
            continue
        out.append(Example(c(pre) + text, target_order(vocab, gs), len(gs) > 1, "impossible_phrase"))
    return out


def generate(vocab: TaskVocabulary, phrasing: Phrasing, n_pos: int, n_impossible: int, n_neg: int, seed: int,
             split: str = "train", known_unknowns: set[str] | None = None) -> tuple[list[Example], dict[str, Any]]:
    """Draw examples (see the module docstring) with ``numpy.random.default_rng(seed)``.

    Args:
        known_unknowns: unknown words that train paraphrases use (never a fault); None: those of this draw.

    Returns:
        ``(examples, info)``: info has ``max_goals``, ``arg1_allowed``/``arg2_allowed`` and ``known_unknowns``.
    """
    rng = np.random.default_rng(seed)
    lex = Lexicon.of(vocab)
    goal_lists = [list(phrasing.sample_goals(vocab, rng)) for _ in range(n_pos)]
    a1, a2 = arg_types(vocab, goal_lists)
    k = max(len(g) for g in goal_lists)
    examples = []
    for goals in goal_lists:
        text, ordered = phrasing.phrase(vocab, goals, rng, split)
        examples.append(Example(text, target_order(vocab, goals, bool(ordered), text), bool(ordered), "paraphrase"))
    examples += impossible_examples(vocab, rng, n_impossible)
    if known_unknowns is None:
        known_unknowns = set()
        for ex in examples:
            ws = split_words(ex.text)
            known_unknowns.update(w for w, kd in zip(ws, word_kinds(ws, lex)) if kd == "unknown")
    for _ in range(n_neg):
        text, kind = phrasing.negatives(vocab, rng, split)
        faults = {}
        if kind in FAULT_KIND:
            ws = split_words(text)
            faults = {w: FAULT_KIND[kind] for w, kd in zip(ws, word_kinds(ws, lex))
                      if kd == "unknown" and w not in known_unknowns}
        examples.append(Example(text, None, False, kind, faults))
    info = {"max_goals": int(k), "arg1_allowed": a1, "arg2_allowed": a2, "known_unknowns": known_unknowns}
    return examples, info


@dataclass
class Encoded:
    """Per example, its trimmed featurised tokens and targets (numpy), ready to batch."""

    states: list[np.ndarray]
    feats: list[np.ndarray]
    fault: list[np.ndarray]       # (L,) int64, -1 ignored
    skill: np.ndarray             # (E, K) int64, -1 ignored
    arg1: np.ndarray              # (E, K) int64, -1 ignored
    arg2: np.ndarray              # (E, K) int64, -1 ignored
    ordered: np.ndarray           # (E,) float32, NaN ignored
    refuse: np.ndarray            # (E,) float32, NaN ignored


def encode_examples(examples: Sequence[Example], featurizer: Featurizer, cfg: GrounderConfig,
                    known_unknowns: set[str], chunk: int = 256) -> Encoded:
    """Featurise and build the targets of ``examples`` (MiniLM runs once per distinct text)."""
    vocab = featurizer.vocab
    names = list(cfg.names)
    k, g = cfg.max_goals, len(cfg.goal_skills)
    e = len(examples)
    skill = np.full((e, k), -1, np.int64)
    arg1 = np.full((e, k), -1, np.int64)
    arg2 = np.full((e, k), -1, np.int64)
    ordered = np.full(e, np.nan, np.float32)
    refuse = np.zeros(e, np.float32)
    states, feats, faults = [], [], []
    for start in range(0, e, chunk):
        part = examples[start:start + chunk]
        batch = featurizer([ex.text if split_words(ex.text) else "." for ex in part])
        for j, ex in enumerate(part):
            i = start + j
            n_tok = int(batch.mask[j].sum())
            states.append(batch.states[j, :n_tok].numpy().astype(np.float16))
            feats.append(batch.feats[j, :n_tok].numpy())
            fl = np.zeros(n_tok, np.int64)
            for t, wid in enumerate(batch.word_ids[j][:n_tok]):
                if wid is None or batch.kinds[j][wid] != "unknown":
                    continue
                w = batch.words[j][wid]
                if ex.goals is not None:
                    fl[t] = 0
                elif w in ex.faults:
                    fl[t] = ex.faults[w]
                elif w not in known_unknowns:
                    fl[t] = -1  # a word of a negative that is not the one at fault, or unclear: no target
            faults.append(fl)
            if ex.kind != "paraphrase":
                refuse[i] = 1.0  # every negative, impossible ones included, must be refused
            if ex.goals is None:
                continue
            ordered[i] = float(ex.ordered)
            for s, goal in enumerate(ex.goals[:k]):
                sk, args = vocab.goal_skill_of(goal)
                skill[i, s] = cfg.goal_skills.index(sk)
                arg1[i, s] = names.index(args[0])
                arg2[i, s] = names.index(args[1]) if len(args) > 1 else len(names)
            if len(ex.goals) < k:
                skill[i, len(ex.goals)] = g
                skill[i, len(ex.goals) + 1:] = g
    return Encoded(states, feats, faults, skill, arg1, arg2, ordered, refuse)


def collate(enc: Encoded, idx: Sequence[int], rng: np.random.Generator | None = None,
            drop: float = 0.0) -> dict[str, torch.Tensor]:
    """A padded training batch of examples ``idx``; with ``rng``, each token that no vocabulary name or skill
    phrase covers and that carries no fault target is hidden with probability ``drop`` (augmentation: a reading
    must not hang on one filler word)."""
    length = max(len(enc.states[i]) for i in idx)
    b = len(idx)
    f = enc.feats[idx[0]].shape[1]
    n_lex = f - 6   # the name and skill columns of grounder.lexical_features
    states = np.zeros((b, length, enc.states[idx[0]].shape[1]), np.float32)
    feats = np.zeros((b, length, f), np.float32)
    mask = np.zeros((b, length), bool)
    fault = np.full((b, length), -1, np.int64)
    for j, i in enumerate(idx):
        n = len(enc.states[i])
        states[j, :n] = enc.states[i]
        feats[j, :n] = enc.feats[i]
        mask[j, :n] = True
        fault[j, :n] = enc.fault[i]
        if rng is not None and drop > 0 and n > 2:
            lexical = enc.feats[i][:, :n_lex].sum(-1) > 0
            hide = (rng.random(n) < drop) & ~lexical & (enc.fault[i] <= 0)
            hide[0] = hide[n - 1] = False   # [CLS], [SEP]
            mask[j, :n] &= ~hide
            fault[j, :n][hide] = -1
    idx = np.asarray(idx)
    return {"states": torch.from_numpy(states), "feats": torch.from_numpy(feats), "mask": torch.from_numpy(mask),
            "fault": torch.from_numpy(fault), "skill": torch.from_numpy(enc.skill[idx]),
            "arg1": torch.from_numpy(enc.arg1[idx]), "arg2": torch.from_numpy(enc.arg2[idx]),
            "ordered": torch.from_numpy(enc.ordered[idx]), "refuse": torch.from_numpy(enc.refuse[idx])}


def loss_terms(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-head losses (means over the targets present)."""
    ce = nn.functional.cross_entropy
    terms = {}
    for key in ("skill", "arg1", "arg2"):   # arg logits are log-probabilities: cross-entropy renormalises them
        tgt = batch[key].flatten()
        terms[key] = ce(out[key].flatten(0, 1), tgt, ignore_index=-1) if (tgt >= 0).any() else out[key].sum() * 0
    fault = batch["fault"].flatten()
    terms["fault"] = ce(out["fault"].flatten(0, 1), fault, ignore_index=-1) if (fault >= 0).any() \
        else out["fault"].sum() * 0
    for key in ("ordered", "refuse"):
        tgt = batch[key]
        ok = ~torch.isnan(tgt)
        terms[key] = (nn.functional.binary_cross_entropy_with_logits(out[key][ok], tgt[ok]) if ok.any()
                      else out[key].sum() * 0)
    return terms


def train_head(enc: Encoded, cfg: GrounderConfig, max_seconds: float, max_steps: int | None = None,
               batch_size: int = 64, lr: float = 1.5e-3, seed: int = 0, token_drop: float = 0.1) -> tuple[GrounderNet, dict[str, Any]]:
    """Train a :class:`GrounderNet` from scratch on ``enc`` until ``max_seconds`` of CPU time (:data:`cpu_clock`) or ``max_steps``.

    ``token_drop``: the probability of hiding a filler token (see :func:`collate`).

    Returns:
        ``(net in eval mode, log)``: ``steps``, ``seconds``, ``loss_first`` / ``loss_last`` (means of 20 steps).
    """
    torch.manual_seed(seed)
    gen = np.random.default_rng(seed)
    net = GrounderNet(cfg)
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    n = len(enc.states)
    t0 = cpu_clock()
    losses: list[float] = []
    step = 0
    warmup = 100
    lengths = np.asarray([len(x) for x in enc.states])

    def epoch() -> list[np.ndarray]:
        """Batches of similar lengths (less padding), in random order."""
        perm = gen.permutation(n)
        batches = []
        for g0 in range(0, n, batch_size * 20):
            group = perm[g0:g0 + batch_size * 20]
            group = group[np.argsort(lengths[group], kind="stable")]
            batches += [group[i:i + batch_size] for i in range(0, len(group), batch_size)]
        return [batches[i] for i in gen.permutation(len(batches))]

    queue: list[np.ndarray] = []
    while True:
        elapsed = cpu_clock() - t0
        if elapsed >= max_seconds or (max_steps is not None and step >= max_steps):
            break
        frac = elapsed / max_seconds if max_steps is None else max(elapsed / max_seconds, step / max_steps)
        scale = min(1.0, (step + 1) / warmup) * max(0.05, 0.5 * (1 + np.cos(np.pi * min(frac, 1.0))))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        if not queue:
            queue = epoch()
        idx = queue.pop()
        batch = collate(enc, idx, gen, token_drop)
        out = net(batch["states"], batch["feats"], batch["mask"])
        terms = loss_terms(out, batch)
        loss = sum(terms.values())
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
    net.eval()
    return net, {"steps": step, "seconds": round(cpu_clock() - t0, 1),
                 "loss_first": float(np.mean(losses[:20])) if losses else float("nan"),
                 "loss_last": float(np.mean(losses[-20:])) if losses else float("nan")}


def outcome(vocab: TaskVocabulary, ex: Example, refused: str | None, goals: Sequence[str], ordered: bool) -> str:
    """``"right"``, ``"wrong"`` (a paraphrase grounded to other goals), ``"refused"`` (a paraphrase refused),
    ``"refused_negative"`` or ``"executed"`` (a negative or an impossible paraphrase that grounded to goals)."""
    positive = ex.goals is not None and ex.kind == "paraphrase"
    if refused is not None:
        return "refused" if positive else "refused_negative"
    if not positive:
        return "executed"
    return "right" if goals_equal(vocab, goals, ex.goals, ex.ordered) else "wrong"


def evaluate(grounder: InstructionGrounder, examples: Sequence[Example], readings: Sequence | None = None
             ) -> tuple[dict[str, int], list]:
    """Outcome counts of ``grounder`` (its thresholds) over ``examples`` (readings reused when given), and the
    readings."""
    if readings is None:
        readings = read_all(grounder, [ex.text for ex in examples])
    counts: dict[str, int] = {}
    for ex, r in zip(examples, readings):
        gr = grounder._decide(ex.text, r)
        o = outcome(grounder.vocabulary, ex, gr.refused, gr.goals, gr.ordered)
        counts[o] = counts.get(o, 0) + 1
    return counts, list(readings)


def read_all(grounder: InstructionGrounder, texts: Sequence[str], chunk: int = 256) -> list:
    """:meth:`InstructionGrounder.read` of ``texts`` in chunks (None for a text without words)."""
    out: list = []
    for i in range(0, len(texts), chunk):
        part = texts[i:i + chunk]
        live = [j for j, t in enumerate(part) if any(w[0].isalnum() for w in split_words(t))]
        got = dict(zip(live, grounder.read([part[j] for j in live])))
        out += [got.get(j) for j in range(len(part))]
    return out


def fit_thresholds(grounder: InstructionGrounder, examples: Sequence[Example]) -> tuple[Thresholds, dict]:
    """Fit :class:`Thresholds` on validation ``examples``: coordinate ascent (twice) over the thresholds between
    observed scores, each maximising ``grounded right - grounded wrong - negatives executed`` and taken in the
    middle of its best interval. Returns the thresholds and the validation counts under them."""
    vocab = grounder.vocabulary
    readings = read_all(grounder, [ex.text for ex in examples])
    e = len(examples)
    fault = np.full(e, -1.0)
    refuse = np.zeros(e)
    conf = np.ones(e)
    always = np.zeros(e, bool)   # refused whatever the thresholds (empty, no goal, impossible)
    positive = np.asarray([ex.goals is not None and ex.kind == "paraphrase" for ex in examples])
    right = np.zeros(e, bool)
    for i, (ex, r) in enumerate(zip(examples, readings)):
        if r is None:
            always[i] = True
            continue
        fault[i] = r.fault_prob if r.fault_word is not None else -1.0
        refuse[i], conf[i] = r.refuse, r.confidence
        always[i] = not r.goals or vocab.impossibility(r.goals) is not None
        if positive[i] and r.goals:
            right[i] = goals_equal(vocab, vocab.canonical_order(r.goals), ex.goals, ex.ordered)

    def score(th: Thresholds) -> int:
        refused = always | (fault > th.fault) | (refuse > th.refuse) | (conf < th.confidence)
        ok = ~refused
        return int((ok & positive & right).sum() - (ok & positive & ~right).sum() - (ok & ~positive).sum())

    values = {"fault": fault[fault >= 0], "refuse": refuse, "confidence": conf}
    th = Thresholds(0.5, 0.5, 0.0)
    for _ in range(2):
        for key in ("fault", "refuse", "confidence"):
            v = np.unique(np.concatenate([values[key], [0.0, 1.0]]))
            grid = np.unique(np.concatenate([[0.0], (v[1:] + v[:-1]) / 2, [1.0]]))
            scores = np.asarray([score(replace(th, **{key: float(t)})) for t in grid])
            best = np.flatnonzero(scores == scores.max())
            th = replace(th, **{key: float((grid[best[0]] + grid[best[-1]]) / 2)})
    grounder.thresholds = th
    best = None
    for ratio in (1.01, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001):  # then the possible-reading ratio, on full decisions
        grounder.thresholds = replace(th, valid_ratio=ratio)
        counts, _ = evaluate(grounder, examples, readings)
        gain = counts.get("right", 0) - counts.get("wrong", 0) - counts.get("executed", 0)
        if best is None or gain > best[0]:
            best = (gain, ratio, counts)
    th = replace(th, valid_ratio=best[1])
    grounder.thresholds = th
    return th, best[2]


def summarize(counts: dict[str, int]) -> dict[str, Any]:
    """Exact match over paraphrases and refusal over negatives (and impossible paraphrases) from outcome counts."""
    pos = counts.get("right", 0) + counts.get("wrong", 0) + counts.get("refused", 0)
    neg = counts.get("refused_negative", 0) + counts.get("executed", 0)
    return {"exact_match": round(counts.get("right", 0) / pos, 4) if pos else None, "paraphrases": pos,
            "refused_rate": round(counts.get("refused_negative", 0) / neg, 4) if neg else None, "negatives": neg,
            "executed": counts.get("executed", 0), "counts": dict(counts)}


def train_grounder(vocab: TaskVocabulary, phrasing: Phrasing, minutes: float = 8.0, seed: int = 0,
                   n_pos: int = 6000, n_impossible: int = 1200, n_neg: int = 2400, n_val: int = 800,
                   max_steps: int | None = None, encoder: TokenEncoder | None = None, command: str = "",
                   model: dict[str, Any] | None = None, log: Any = None) -> InstructionGrounder:
    """Generate, encode, train, fit thresholds: a ready :class:`InstructionGrounder` (not saved).

    Args:
        vocab: the task's vocabulary. phrasing: the generator (split ``"train"`` only). minutes: the whole CPU-time budget
            (generation, encoding, training, fitting), > 0. seed: the training draw's seed (validation:
            ``seed + 500``). n_pos, n_impossible, n_neg: training draw sizes; n_val: validation paraphrases (a
            quarter as many impossible ones, half as many negatives). max_steps: optional cap on optimiser steps.
        encoder: a :class:`TokenEncoder` (loaded when None). command: recorded in the checkpoint.
        model: overrides of :class:`GrounderConfig` fields (``dim``, ``decoder_layers``, ``encoder_layers``...).
        log: optional ``print``-like callable for progress lines.

    Raises:
        ValueError: a non-positive budget or draw size.
    """
    if not minutes > 0:
        raise ValueError(f"minutes must be > 0, got {minutes}")
    if min(n_pos, n_val) < 1 or min(n_impossible, n_neg) < 0:
        raise ValueError("draw sizes must be >= 1 (n_pos, n_val) and >= 0 (n_impossible, n_neg)")
    say = log or (lambda *_: None)
    t0, wall0 = cpu_clock(), time.perf_counter()
    model = dict(model or {})
    encoder = encoder or TokenEncoder(int(model.get("encoder_layers", 2)), int(model.get("max_tokens", 64)))
    train, info = generate(vocab, phrasing, n_pos, n_impossible, n_neg, seed)
    val, _ = generate(vocab, phrasing, n_val, n_val // 4, n_val // 2, seed + VAL_SEED_OFFSET,
                      known_unknowns=info["known_unknowns"])
    lex = Lexicon.of(vocab)
    cfg = GrounderConfig(names=lex.names, goal_skills=tuple(vocab.goal_skills), skills=lex.skills,
                         max_goals=info["max_goals"], encoder_layers=encoder.layers, max_tokens=encoder.max_tokens,
                         arg1_allowed=tuple(map(tuple, info["arg1_allowed"].tolist())),
                         arg2_allowed=tuple(map(tuple, info["arg2_allowed"].tolist())),
                         **{k: v for k, v in model.items() if k not in ("encoder_layers", "max_tokens")})
    featurizer = Featurizer(vocab, encoder)
    enc = encode_examples(train, featurizer, cfg, info["known_unknowns"])
    val_words = [split_words(ex.text) for ex in val]
    encoder.encode([w for w in val_words if w])  # cached for the threshold fit
    t_enc = cpu_clock() - t0
    say(f"generated and encoded {len(train)} train + {len(val)} val texts in {t_enc:.0f} s")
    reserve = 10.0 + 0.01 * len(val)  # threshold fitting and validation (texts already encoded)
    budget = max(5.0, minutes * 60.0 - (cpu_clock() - t0) - reserve)
    net, train_log = train_head(enc, cfg, budget, max_steps=max_steps, seed=seed)
    say(f"trained {train_log['steps']} steps in {train_log['seconds']} s (loss {train_log['loss_first']:.3f} -> "
        f"{train_log['loss_last']:.3f})")
    grounder = InstructionGrounder(vocab, cfg, net, Thresholds(), encoder=encoder)
    th, counts = fit_thresholds(grounder, val)
    total_minutes = (cpu_clock() - t0) / 60.0
    wall_minutes = (time.perf_counter() - wall0) / 60.0
    grounder.meta = {
        "seeds": {"train": int(seed), "validation": int(seed + VAL_SEED_OFFSET), "torch": int(seed),
                  "split": "train", "generator": getattr(phrasing, "__name__", type(phrasing).__name__)},
        "minutes": round(total_minutes, 2),
        "wall_minutes": round(wall_minutes, 2),
        "training": {"n_train": len(train), "n_val": len(val), "encode_seconds": round(t_enc, 1), **train_log,
                     "threads": torch.get_num_threads()},
        "metrics": {"validation": summarize(counts)},
        "command": command,
    }
    say(f"thresholds {th}; validation {summarize(counts)}; {total_minutes:.1f} min")
    return grounder


__all__ = ["Example", "FAULT_CLASSES", "Phrasing", "arg_types", "encode_examples", "evaluate", "fit_thresholds",
           "generate", "summarize", "train_grounder", "train_head"]
