"""A run's ``examples`` block typed: :class:`TranslationExamples` and :class:`NavigationExamples` write the
summary's ``examples`` JSON and read it back (``from_dict``) where the views show it. A reader fills a field the
block lacks with what the views show for it (an empty text, a return of 0, "?")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


# ---------------------------------------------------------------------------- translation
@dataclass(frozen=True)
class TokenProb:
    """A reference token and the probability the victim gives it, teacher-forced."""

    token: str
    prob: float

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "prob": self.prob}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TokenProb":
        return cls(str(d["token"]), float(d["prob"]))


@dataclass(frozen=True)
class TranslationExample:
    """One sentence pair: its record ``index``, whether it is a ``member``, the ``source``, the ``reference``,
    the victim's greedy ``translation`` with its ``sentence_bleu``, and each reference token's probability."""

    index: int | None
    member: bool
    source: str
    reference: str
    translation: str
    sentence_bleu: float
    tokens: tuple[TokenProb, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "member": self.member, "source": self.source, "reference": self.reference,
                "translation": self.translation, "sentence_bleu": self.sentence_bleu,
                "tokens": [t.to_dict() for t in self.tokens]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TranslationExample":
        index = d.get("index")
        return cls(None if index is None else int(index), bool(d.get("member")), str(d.get("source", "")),
                   str(d.get("reference", "")), str(d.get("translation", "")), float(d.get("sentence_bleu", 0)),
                   tuple(TokenProb.from_dict(t) for t in d.get("tokens", [])))


@dataclass(frozen=True)
class TranslationExamples:
    """The translation task's examples: a few member and non-member sentences."""

    sentences: tuple[TranslationExample, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "translation", "sentences": [s.to_dict() for s in self.sentences]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TranslationExamples":
        return cls(tuple(TranslationExample.from_dict(s) for s in d.get("sentences", [])))


# ---------------------------------------------------------------------------- navigation
@dataclass(frozen=True)
class ExampleMap:
    """One example map rendered with the victim's query path (``png_base64``): the ``role`` of its record, its
    ``seed``, and the episode's return (``episode_return``, JSON ``return``), ``steps`` and ``reached_goal``."""

    role: str
    seed: int | None
    episode_return: float
    steps: int | None
    reached_goal: bool
    png_base64: str

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "seed": self.seed, "return": self.episode_return, "steps": self.steps,
                "reached_goal": self.reached_goal, "png_base64": self.png_base64}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExampleMap":
        return cls(str(d.get("role", "?")), d.get("seed"), float(d.get("return", 0)), d.get("steps"),
                   bool(d.get("reached_goal", True)), str(d["png_base64"]))


@dataclass(frozen=True)
class MemberUnseen:
    """One statistic on the evaluation members' maps and on unseen maps (None where a block lacks it)."""

    member: float | None
    unseen: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"member": self.member, "unseen": self.unseen}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MemberUnseen":
        return cls(d.get("member"), d.get("unseen"))


@dataclass(frozen=True)
class NavigationExamples:
    """The navigation task's examples: the environment, the example maps, and per side (members' maps, unseen
    maps) the mean steps to the goal, mean return, success rate and number of maps (None where a block
    lacks the statistic)."""

    env_id: str | None
    maps: tuple[ExampleMap, ...]
    steps_to_goal: MemberUnseen | None
    episode_return: MemberUnseen | None
    success_rate: MemberUnseen | None
    n_maps: MemberUnseen | None

    def to_dict(self) -> dict[str, Any]:
        def side(s: MemberUnseen | None) -> dict[str, Any] | None:
            return None if s is None else s.to_dict()

        return {"kind": "navigation", "env_id": self.env_id, "maps": [m.to_dict() for m in self.maps],
                "steps_to_goal": side(self.steps_to_goal), "return": side(self.episode_return),
                "success_rate": side(self.success_rate), "n_maps": side(self.n_maps)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "NavigationExamples":
        def side(block: Mapping[str, Any] | None) -> MemberUnseen | None:
            return MemberUnseen.from_dict(block) if block else None

        return cls(d.get("env_id"), tuple(ExampleMap.from_dict(m) for m in d.get("maps", [])),
                   side(d.get("steps_to_goal")), side(d.get("return")), side(d.get("success_rate")),
                   side(d.get("n_maps")))
