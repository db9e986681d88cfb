"""A translation data source as records: word and punctuation tokens (:func:`tokenize`, and back for
BLEU: :func:`detokenize`), the vocabularies (:class:`Vocab`; ids 0..3 the specials of
:mod:`core.models.translation`), and the pairs tokenized, filtered by length and encoded
(:func:`build_records` → :class:`TranslationRecords`).

Imports only ``core.foundations`` and ``core.models`` (the special token ids)."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from core.models.translation import EOS, PAD, SOS, UNK

SPECIALS = ("<pad>", "<sos>", "<eos>", "<unk>")
assert [SPECIALS.index(s) for s in SPECIALS] == [PAD, SOS, EOS, UNK]

# ---------------------------------------------------------------------------- text processing
_TOKEN = re.compile(r"\w+|[^\w\s]")
_ATTACH_LEFT = set(".,!?;:)]}%")  # no space before these
_ATTACH_RIGHT = set("([{$")  # no space after these
_ATTACH_BOTH = set("'-/")  # "man's", "t-shirt", "and/or"


def tokenize(text: str) -> list[str]:
    """Lower-case word and punctuation tokens: runs of word characters, or one other character."""
    return _TOKEN.findall(text.lower())


def detokenize(tokens: list[str]) -> str:
    """Join tokens into text for BLEU. Inverse of :func:`tokenize` on its output:
    ``tokenize(detokenize(t)) == t``, because spaces are only dropped next to punctuation,
    which is tokenized one character at a time anyway."""
    out = ""
    prev = ""
    for tok in tokens:
        glue = (not out or tok in _ATTACH_LEFT or tok in _ATTACH_BOTH or prev in _ATTACH_RIGHT or prev in _ATTACH_BOTH)
        # never glue two word tokens: that would merge them on re-tokenization
        if glue and out and tok[0].isalnum() and prev[-1:].isalnum():
            glue = False
        out += tok if glue else " " + tok
        prev = tok
    return out


@dataclass
class Vocab:
    """Token ↔ id map; ids 0..3 are ``<pad> <sos> <eos> <unk>``, then by frequency (ties: alphabetical)."""

    itos: list[str]

    def __post_init__(self) -> None:
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, sentences: list[list[str]], min_freq: int = 1, max_size: int = 0) -> "Vocab":
        """Tokens seen at least ``min_freq`` times, most frequent first; with ``max_size`` > 0 at
        most that many entries in all (the four specials included), the rarer ones becoming <unk>."""
        counts = Counter(t for s in sentences for t in s)
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in SPECIALS), key=lambda t: (-counts[t], t))
        if max_size:
            kept = kept[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + kept)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> np.ndarray:
        return np.array([self.stoi.get(t, UNK) for t in tokens], dtype=np.int64)

    def decode(self, ids) -> list[str]:
        """Tokens up to the first <eos>, without <pad>/<sos>."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i not in (PAD, SOS):
                out.append(self.itos[i])
        return out


@dataclass
class TranslationRecords:
    """The data source: raw pairs, their token ids (no specials) and the two vocabularies."""

    src_text: list[str]
    tgt_text: list[str]
    src_ids: list[np.ndarray]
    tgt_ids: list[np.ndarray]
    src_vocab: Vocab
    tgt_vocab: Vocab
    #: each record's id (``pairs``: its line number in the files); None for the other sources
    record_ids: list[int] | None = None

    def reference(self, i: int) -> str:
        """The detokenized (lower-cased) reference of record i, as BLEU compares it."""
        return detokenize(tokenize(self.tgt_text[i]))


def build_records(pairs: list[tuple[str, str]], min_freq: int, max_len: int, max_vocab: int = 0,
                  ids: list[int] | None = None) -> TranslationRecords:
    """Tokenize, drop pairs longer than ``max_len`` tokens, build both vocabularies, encode.

    The vocabularies come from the *whole data source* (victim's and attacker's halves). We
    treat the vocabulary as public side-information, part of the model specification that
    Shokri et al.'s attacker is assumed to know, so victim and shadows share one
    preprocessing. Building it from the victim's members instead would make the vocabulary
    itself leak membership (a rare word is in it only if some member contains it, so members
    would have fewer <unk> than non-members whatever the model learned) and would give shadows
    a preprocessing different from the victim's.
    """
    src_tok, tgt_tok, src_text, tgt_text, kept_ids = [], [], [], [], []
    for k, (s, t) in enumerate(pairs):
        ts, tt = tokenize(s), tokenize(t)
        if 0 < len(ts) <= max_len and 0 < len(tt) <= max_len:
            src_tok.append(ts)
            tgt_tok.append(tt)
            src_text.append(s)
            tgt_text.append(t)
            if ids is not None:
                kept_ids.append(ids[k])
    sv, tv = Vocab.build(src_tok, min_freq, max_vocab), Vocab.build(tgt_tok, min_freq, max_vocab)
    return TranslationRecords(src_text, tgt_text, [sv.encode(s) for s in src_tok], [tv.encode(t) for t in tgt_tok], sv, tv,
                              kept_ids if ids is not None else None)
