"""``captions``: a seeded generator of Multi30K-like caption pairs (English → a synthetic language).

The built-in, offline data source of the translation task. English captions describe people and
animals doing things somewhere ("A young man in a red shirt is riding a bike on the street."),
like the Flickr30K descriptions Multi30K is built from (Elliott et al. 2016). The target language
("Veltan") is synthetic, with real translation structure, and — unlike free human variation —
every choice it makes is **decided by context the source shows** (``docs/captions_grammar.md``):

* each noun has two synonyms, the *subject form* and the *oblique form*, chosen by the noun
  phrase's role (the subject of a clause, or anything else);
* each verb has two synonyms, chosen by its subject's animacy (people, or animals only);
* grammatical gender (m/f/n, a property of each noun synonym) and number: articles, numerals and
  adjectives agree with their noun, verbs with their subject's number;
* reordering: adjectives follow the noun in mirrored order, relative and "while" clauses are
  verb-final, a time phrase moves to the front, multi-word prepositions become one word.

So a model can learn the whole mapping from a few hundred pairs and translate unseen sentences
(validation BLEU is not capped by unpredictable wording); what it memorises beyond the rules —
rare word forms and whole sentences seen in training — is what membership inference detects.

:func:`translate` re-derives a target from its English source alone with an independent parser
of the documented grammar.

**Held-out combinations.** A fixed share of (adjective, noun) and (verb, object noun)
combinations is *reserved* (:func:`reserved`): the default ``split="train"`` never uses them, and
``split="heldout"`` yields only sentences that contain at least one of them — new combinations
of known words, never new words — to measure compositional generalisation.

The lexicons are fixed (the Veltan words are drawn once from :data:`LANGUAGE_SEED`); sentences
depend on ``seed`` only, so ``generate_captions(n, seed)`` is deterministic.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from functools import lru_cache

#: Seed of the synthetic target lexicon (fixed: the language is the same for every corpus seed).
LANGUAGE_SEED = 20240531
#: Version of the grammar (changes what a seed generates)
GRAMMAR_VERSION = 2
#: Share of (adjective, noun) and (verb, object) combinations reserved for the held-out split
RESERVED_SHARE = 0.12

# ---------------------------------------------------------------------------- English lexicon
PEOPLE = ("man woman boy girl child worker player musician dancer cyclist skier surfer chef doctor teacher farmer "
          "tourist student singer climber").split()
ANIMALS = "dog cat horse cow lamb bird duck goat pony rabbit monkey elephant".split()
CLOTHING = "shirt jacket dress hat coat helmet sweater skirt uniform scarf".split()
OBJECTS = "ball bag guitar book kite umbrella camera cup frisbee box phone drum sign basket bottle rope".split()
FOOD = "apple sandwich pizza cake banana carrot cookie donut".split()
VEHICLES = "car bus boat truck bike train".split()
PLACES = ("street park beach field river lake pool mountain market kitchen stage garden road sidewalk forest "
          "city").split()
NOUN_CATEGORIES = {"people": PEOPLE, "animals": ANIMALS, "clothing": CLOTHING, "objects": OBJECTS, "food": FOOD,
                   "vehicles": VEHICLES, "places": PLACES}
#: object classes that transitive verbs select (subsets of the categories above)
OBJECT_CLASSES = {
    "balls": ["ball", "frisbee"], "instruments": ["guitar", "drum"], "readables": ["book", "sign"],
    "rideable": ["bike", "horse", "pony", "elephant", "bus", "train", "boat"], "pets": ["cat", "rabbit", "bird", "duck", "dog"],
    "carryable": ["bag", "box", "basket", "umbrella", "camera", "cup", "bottle", "rope", "phone", "book"],
}
#: every plural differs from its singular, so a noun's number is always visible in the source
_IRREGULAR_PLURALS = {"man": "men", "woman": "women", "child": "children"}

ADJECTIVES = {
    "people": "young old little tall happy tired".split(),
    "animals": "small big young hungry playful wet".split(),
    "things": "small big old new wooden heavy".split(),
    "places": "busy quiet sunny crowded empty snowy".split(),
}
COLOURS = "red blue green yellow black white pink purple".split()
#: verb lemma -> subjects ("p" people, "a" animals) and object classes / categories ("" intransitive)
VERBS = {
    "run": ("pa", ""), "walk": ("pa", ""), "jump": ("pa", ""), "sit": ("pa", ""), "stand": ("pa", ""),
    "sleep": ("pa", ""), "swim": ("pa", ""), "wait": ("pa", ""), "rest": ("pa", ""), "dance": ("p", ""),
    "smile": ("p", ""), "climb": ("p", ""),
    "hold": ("p", "carryable,food,pets"), "carry": ("pa", "carryable,food"), "throw": ("p", "balls"),
    "catch": ("pa", "balls"), "kick": ("p", "balls"), "play": ("p", "instruments"), "ride": ("p", "rideable"),
    "read": ("p", "readables"), "eat": ("pa", "food"), "cut": ("p", "food"), "push": ("p", "vehicles,carryable"),
    "pull": ("pa", "carryable,vehicles"), "watch": ("pa", "animals,people"), "feed": ("p", "animals"),
    "wash": ("p", "vehicles,animals"), "drive": ("p", "vehicles"),
}
PREPOSITIONS = ["in", "on", "at", "near", "beside", "behind", "in front of", "next to", "across", "along"]
NUMBERS = ["two", "three", "four", "several"]
TIMES = ["at night", "in the rain", "in the morning", "in the evening", "in winter", "on a sunny day"]

_ING_DOUBLE = {"run", "swim", "sit", "cut"}


def _plural(noun: str) -> str:
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _ing(verb: str) -> str:
    if verb in _ING_DOUBLE:
        return verb + verb[-1] + "ing"
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    return verb + "ing"


def _third(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


# ---------------------------------------------------------------------------- Veltan morphology
#: article by (definiteness, gender, number); a plural noun phrase always has "the" or a numeral
DEF_ART = {("m", "sg"): "il", ("f", "sg"): "la", ("n", "sg"): "lo", ("m", "pl"): "ei", ("f", "pl"): "ele", ("n", "pl"): "ela"}
INDEF_ART = {"m": "un", "f": "una", "n": "unu"}
ADJ_SUFFIX = {("m", "sg"): "o", ("f", "sg"): "a", ("n", "sg"): "e", ("m", "pl"): "os", ("f", "pl"): "as", ("n", "pl"): "es"}
GENDER_VOWEL = {"m": "o", "f": "a", "n": "e"}
VERB_SG, VERB_PL = "et", "unt"
#: Veltan function words
AND, WHO, WHILE, WITH = "e", "ke", "dum", "kon"

_ONSETS = "b d f g k l m n p r s t v z br kr tr pl st gr dr fl sk sv kl vr".split()
_VOWELS = "a e i o u a e i o".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "m", "k", "t"]


def _veltan_plural(sg: str, gender: str) -> str:
    if gender == "m":
        return sg + "i"
    return sg[:-1] + ("e" if gender == "f" else "a")


class _Lexicon:
    """English lexicon and its fixed Veltan words, built once from :data:`LANGUAGE_SEED`."""

    def __init__(self) -> None:
        rng = random.Random(LANGUAGE_SEED * 10 + GRAMMAR_VERSION)
        self._rng = rng
        self._used: set[str] = {DEF_ART[k] for k in DEF_ART} | set(INDEF_ART.values()) | {AND, WHO, WHILE, WITH}
        self.nouns = {c: list(ws) for c, ws in NOUN_CATEGORIES.items()}
        self.noun_cat = {w: c for c, ws in NOUN_CATEGORIES.items() for w in ws}
        self.classes = {**{c: list(ws) for c, ws in NOUN_CATEGORIES.items()}, **OBJECT_CLASSES}
        #: lemma -> (subject form, oblique form), each (sg, pl, gender)
        self.noun_syn: dict[str, list[tuple[str, str, str]]] = {w: [self._new_noun(), self._new_noun()]
                                                                for w in self.noun_cat}
        self.adj_list = {k: list(v) for k, v in ADJECTIVES.items()}
        self.colours = list(COLOURS)
        all_adj = list(dict.fromkeys([a for v in ADJECTIVES.values() for a in v] + COLOURS))
        self.adj_stem = {a: self._new_stem(2, 3, suffixes=list(set(ADJ_SUFFIX.values()))) for a in all_adj}
        self.verb_forms = {v: (_ing(v), _third(v), v) for v in VERBS}
        #: lemma -> (form with a person subject, form with an animal subject) stems
        self.verb_stem = {v: (self._new_stem(2, 3, suffixes=[VERB_SG, VERB_PL]),
                              self._new_stem(2, 3, suffixes=[VERB_SG, VERB_PL])) for v in VERBS}
        self.intransitive = {s: [v for v, (subj, objs) in VERBS.items() if s in subj and not objs] for s in "pa"}
        self.transitive = {s: [(v, objs.split(",")) for v, (subj, objs) in VERBS.items() if s in subj and objs]
                           for s in "pa"}
        self.prep = {p: self._new_stem(1, 2) for p in PREPOSITIONS}
        self.number_stem = {n: self._new_stem(1, 2, suffixes=list(GENDER_VOWEL.values())) for n in NUMBERS}
        self.times = {t: " ".join(self._new_stem(1, 2) for _ in range(max(1, len(t.split()) - 1))) for t in TIMES}

    # -- word drawing: every inflected form is new, so each Veltan token maps back to one lemma
    def _word(self, syllables: int) -> str:
        r = self._rng
        return "".join(r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS) for _ in range(syllables))

    def _fresh(self, make, forms) -> str:
        while True:
            stem = make()
            words = forms(stem)
            if not any(w in self._used for w in words):
                self._used.update(words)
                return stem

    def _new_stem(self, lo: int, hi: int, suffixes: list[str] | None = None) -> str:
        r = self._rng

        def make() -> str:
            w = self._word(r.randint(lo, hi))
            return w if suffixes is None or w[-1] not in "aeiou" else w + r.choice("nrlst")

        return self._fresh(make, lambda s: [s] if suffixes is None else [s + x for x in suffixes])

    def _new_noun(self) -> tuple[str, str, str]:
        """(sg, pl, gender): m ends in a consonant (pl +i), f in -a (pl -e), n in -o (pl -a)."""
        r = self._rng
        gender = r.choice("mfn")

        def make() -> str:
            w = self._word(r.randint(1, 2))
            if gender == "m":
                return w if w[-1] not in "aeiou" else w + r.choice("nrlskt")
            return (w[:-1] if w[-1] in "aeiou" else w) + ("a" if gender == "f" else "o")

        sg = self._fresh(make, lambda s: [s, _veltan_plural(s, gender)])
        return sg, _veltan_plural(sg, gender), gender

    # -- Veltan phrases (shared by the generator and the parser's translator)
    def np(self, lemma: str, plural: bool, det: str, adjs: list[str], colour: str | None, subject: bool) -> list[str]:
        """Veltan noun phrase: determiner, noun (subject or oblique form), colour, adjectives mirrored."""
        sg, pl, gender = self.noun_syn[lemma][0 if subject else 1]
        num = "pl" if plural else "sg"
        if det in NUMBERS:
            det_t = [self.number_stem[det] + GENDER_VOWEL[gender]]
        elif det == "the":
            det_t = [DEF_ART[gender, num]]
        else:
            det_t = [INDEF_ART[gender]]
        mods = ([colour] if colour else []) + list(reversed(adjs))
        return det_t + [pl if plural else sg] + [self.adj_stem[a] + ADJ_SUFFIX[gender, num] for a in mods]

    def verb(self, lemma: str, plural: bool, animate_subject: bool) -> str:
        return self.verb_stem[lemma][0 if animate_subject else 1] + (VERB_PL if plural else VERB_SG)


@lru_cache(maxsize=1)
def lexicon() -> _Lexicon:
    """The (cached) English lexicon with its fixed Veltan words."""
    return _Lexicon()


def _pair_key(kind: str, a: str, b: str) -> float:
    digest = hashlib.sha256(f"{LANGUAGE_SEED}:{kind}:{a}:{b}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def possible_combinations() -> dict[str, list[tuple[str, str]]]:
    """Every (adjective or colour, noun) and (verb, object noun) combination the grammar can generate."""
    lex = lexicon()
    kinds = {"people": "people", "animals": "animals", "places": "places"}
    adj_noun = set()
    for noun, cat in lex.noun_cat.items():
        adj_noun |= {(a, noun) for a in lex.adj_list[kinds.get(cat, "things")]}
        if cat in ("clothing", "objects", "vehicles", "animals"):
            adj_noun |= {(c, noun) for c in lex.colours}
    verb_object = {(v, o) for v, (_, objs) in VERBS.items() if objs for c in objs.split(",") for o in lex.classes[c]}
    return {"adj_noun": sorted(adj_noun), "verb_object": sorted(verb_object)}


@lru_cache(maxsize=1)
def reserved_combinations() -> frozenset[tuple[str, str, str]]:
    """The reserved combinations: each possible one whose fixed hash falls below
    :data:`RESERVED_SHARE`, unless reserving it would leave one of its two words with fewer than two
    unreserved combinations of that kind (so every word keeps occurring in the training split;
    a noun that only one verb takes, like *drum*, is never reserved with it)."""
    out = set()
    for kind, combos in possible_combinations().items():
        free: dict[tuple[int, str], int] = {}
        for a, b in combos:
            free[0, a] = free.get((0, a), 0) + 1
            free[1, b] = free.get((1, b), 0) + 1
        for a, b in sorted(combos, key=lambda c: _pair_key(kind, *c)):
            if _pair_key(kind, a, b) >= RESERVED_SHARE:
                break
            if free[0, a] > 2 and free[1, b] > 2:
                out.add((kind, a, b))
                free[0, a] -= 1
                free[1, b] -= 1
    return frozenset(out)


def reserved(kind: str, a: str, b: str) -> bool:
    """Whether the combination (``a``, ``b``) of ``kind`` ("adj_noun": adjective or colour, noun;
    "verb_object": verb lemma, object noun) is reserved for the held-out split."""
    return (kind, a, b) in reserved_combinations()


# ---------------------------------------------------------------------------- generation
@dataclass
class CaptionPair:
    """One generated pair and the combinations it uses (for the held-out split)."""

    source: str
    target: str
    combinations: set[tuple[str, str, str]] = field(default_factory=set)


class _Sentence:
    """Generates one caption pair: every method returns (english words, target words)."""

    def __init__(self, lex: _Lexicon, rng: random.Random):
        self.lex, self.r = lex, rng
        self.combos: set[tuple[str, str, str]] = set()

    def noun_phrase(self, cls: str, subject: bool, allow_plural: bool = True) -> tuple[list[str], list[str], bool, str]:
        """(en, tgt, plural, lemma) of a noun phrase whose noun is drawn from ``cls``."""
        lex, r = self.lex, self.r
        lemma = r.choice(lex.classes[cls])
        cat = lex.noun_cat[lemma]
        plural = allow_plural and r.random() < 0.15
        det = (r.choice(NUMBERS) if r.random() < 0.6 else "the") if plural else ("the" if r.random() < 0.4 else "a")
        kind = {"people": "people", "animals": "animals", "places": "places"}.get(cat, "things")
        adjs = [r.choice(lex.adj_list[kind])] if r.random() < 0.35 else []
        colour_p = {"clothing": 0.8, "objects": 0.25, "vehicles": 0.25, "animals": 0.2}.get(cat, 0.0)
        colour = r.choice(lex.colours) if r.random() < colour_p else None
        for a in adjs + ([colour] if colour else []):
            self.combos.add(("adj_noun", a, lemma))
        noun_en = _plural(lemma) if plural else lemma
        words = adjs + ([colour] if colour else []) + [noun_en]
        det_en = [det] if det != "a" else [_article(words[0])]
        return det_en + words, lex.np(lemma, plural, det, adjs, colour, subject), plural, lemma

    def subject(self, attributes: bool = True) -> tuple[list[str], list[str], bool, bool]:
        """(en, tgt, plural, animate) of a subject with an optional attribute or relative clause."""
        r = self.r
        animate = r.random() < 0.7
        en, t, plural, _ = self.noun_phrase("people" if animate else "animals", subject=True)
        if r.random() < 0.1:  # coordination "a man and a dog": plural; person verbs if any person
            animate2 = r.random() < 0.6
            en2, t2, _, _ = self.noun_phrase("people" if animate2 else "animals", subject=True)
            return en + ["and"] + en2, t + [AND] + t2, True, animate or animate2
        x = r.random()
        if attributes and animate and x < 0.3:  # "in a red shirt" / "wearing a hat" / "with a guitar"
            if r.random() < 0.7:
                lead = r.choice(["in", "wearing"])
                a_en, a_t, _, _ = self.noun_phrase("clothing", subject=False, allow_plural=False)
            else:
                lead = "with"
                a_en, a_t, _, _ = self.noun_phrase("carryable", subject=False, allow_plural=False)
            en, t = en + [lead] + a_en, t + [WITH] + a_t
        elif attributes and x < 0.4:  # relative clause, verb-final: "who is holding a cup" -> "ke una tasa tenet"
            v_en, v_t, o_en, o_t = self.predicate(plural, animate, progressive=True)
            en, t = en + ["who"] + v_en + o_en, t + [WHO] + o_t + v_t
        return en, t, plural, animate

    def predicate(self, plural: bool, animate: bool, progressive: bool) -> tuple[list[str], list[str], list[str], list[str]]:
        """(en verb, tgt verb, en object, tgt object)."""
        lex, r = self.lex, self.r
        kind = "p" if animate else "a"
        if r.random() < 0.55 and lex.transitive[kind]:
            lemma, classes = r.choice(lex.transitive[kind])
            o_en, o_t, _, obj = self.noun_phrase(r.choice(classes), subject=False)
            self.combos.add(("verb_object", lemma, obj))
        else:
            lemma = r.choice(lex.intransitive[kind])
            o_en, o_t = [], []
        ing, third, base = lex.verb_forms[lemma]
        if progressive:
            v_en = ["are" if plural else "is", ing]
        else:
            v_en = [base if plural else third]
        return v_en, [lex.verb(lemma, plural, animate)], o_en, o_t

    def place(self) -> tuple[list[str], list[str]]:
        prep = self.r.choice(PREPOSITIONS)
        n_en, n_t, _, _ = self.noun_phrase("places", subject=False)
        return prep.split() + n_en, [self.lex.prep[prep]] + n_t

    def sentence(self) -> tuple[list[str], list[str]]:
        r = self.r
        s_en, s_t, plural, animate = self.subject()
        v_en, v_t, o_en, o_t = self.predicate(plural, animate, progressive=r.random() < 0.6)
        en, t = s_en + v_en + o_en, s_t + v_t + o_t
        if r.random() < 0.7:
            p_en, p_t = self.place()
            en, t = en + p_en, t + p_t
        if r.random() < 0.12:  # time phrase: last in English, first in Veltan
            phrase = r.choice(TIMES)
            en, t = en + phrase.split(), self.lex.times[phrase].split() + [","] + t
        if r.random() < 0.15:  # "while" clause: verb-final in Veltan
            s2_en, s2_t, plural2, animate2 = self.subject(attributes=False)
            v2_en, v2_t, o2_en, o2_t = self.predicate(plural2, animate2, progressive=True)
            c_en, c_t = s2_en + v2_en + o2_en, s2_t + o2_t
            if r.random() < 0.4:
                p_en, p_t = self.place()
                c_en, c_t = c_en + p_en, c_t + p_t
            en, t = en + [",", "while"] + c_en, t + [",", WHILE] + c_t + v2_t
        return en, t


def _surface(words: list[str]) -> str:
    text = " ".join(words).replace(" ,", ",")
    return text[0].upper() + text[1:] + "."


def generate_caption_pairs(n: int, seed: int = 0, split: str = "train") -> list[CaptionPair]:
    """``n`` distinct caption pairs with the combinations each uses (see :func:`generate_captions`)."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    lex = lexicon()
    rng = random.Random(f"captions-v{GRAMMAR_VERSION}-{split}-{seed}")
    seen: set[str] = set()
    out: list[CaptionPair] = []
    attempts = 0
    limit = (60 if split == "heldout" else 20) * n + 1000
    while len(out) < n:
        attempts += 1
        if attempts > limit:
            raise RuntimeError(f"could not generate {n} distinct {split} captions")
        gen = _Sentence(lex, rng)
        en, t = gen.sentence()
        held = any(reserved(*c) for c in gen.combos)
        if held != (split == "heldout"):
            continue
        if not 4 <= sum(w != "," for w in en) <= 24:
            continue
        src = _surface(en)
        if src in seen:
            continue
        seen.add(src)
        out.append(CaptionPair(src, _surface(t), set(gen.combos)))
    return out


def generate_captions(n: int, seed: int = 0, split: str = "train") -> list[tuple[str, str]]:
    """``n`` distinct (English, Veltan) caption pairs, deterministic given ``seed`` and ``split``.

    ``split="train"`` (the translation task's data source) never uses a reserved combination;
    ``split="heldout"`` only yields sentences with at least one (:func:`reserved`).
    """
    return [(p.source, p.target) for p in generate_caption_pairs(n, seed, split)]


# ---------------------------------------------------------------------------- independent translator
class GrammarError(ValueError):
    """An English caption that the documented grammar does not generate."""


class _Parser:
    """Recursive-descent parser of the English side; emits Veltan by the documented rules."""

    def __init__(self, words: list[str]):
        self.lex = lexicon()
        self.w = words
        self.i = 0
        lex = self.lex
        self.nouns = {w: w for w in lex.noun_cat} | {_plural(w): w for w in lex.noun_cat}
        self.adjs = {a for v in lex.adj_list.values() for a in v}
        self.verbs = {}
        for lemma, (ing, third, base) in lex.verb_forms.items():
            self.verbs[ing] = (lemma, "ing")
            self.verbs[third] = (lemma, "sg")
            self.verbs[base] = (lemma, "pl")

    def peek(self, k: int = 0) -> str | None:
        return self.w[self.i + k] if self.i + k < len(self.w) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise GrammarError(f"expected {expected or 'a word'} at position {self.i}, got {tok!r}")
        self.i += 1
        return tok

    def at(self, phrase: str) -> bool:
        parts = phrase.split()
        return self.w[self.i : self.i + len(parts)] == parts

    def noun_phrase(self, subject: bool, classes: list[str]) -> tuple[list[str], bool, str]:
        det = self.take()
        if det in ("a", "an"):
            det = "a"
        elif det not in NUMBERS and det != "the":
            raise GrammarError(f"a noun phrase starts with a determiner, got {det!r}")
        adjs, colour = [], None
        while self.peek() in self.adjs:
            adjs.append(self.take())
        if self.peek() in COLOURS:
            colour = self.take()
        noun = self.take()
        if noun not in self.nouns:
            raise GrammarError(f"unknown noun {noun!r}")
        lemma = self.nouns[noun]
        if not any(lemma in self.lex.classes[c] for c in classes):
            raise GrammarError(f"{noun!r} cannot stand here (expected one of {', '.join(classes)})")
        plural = noun != lemma
        if plural != (det in NUMBERS or (det == "the" and plural)):
            raise GrammarError(f"determiner {det!r} does not fit {noun!r}")
        return self.lex.np(lemma, plural, det, adjs, colour, subject), plural, lemma

    def subject(self) -> tuple[list[str], bool, bool]:
        t, plural, lemma = self.noun_phrase(True, ["people", "animals"])
        animate = self.lex.noun_cat[lemma] == "people"
        if self.peek() == "and":
            self.take()
            t2, _, lemma2 = self.noun_phrase(True, ["people", "animals"])
            return t + [AND] + t2, True, animate or self.lex.noun_cat[lemma2] == "people"
        if animate and self.peek() in ("in", "wearing", "with") and self.peek(1) in ("a", "an", "the"):
            lead = self.take()
            a_t, _, _ = self.noun_phrase(False, ["carryable"] if lead == "with" else ["clothing"])
            t = t + [WITH] + a_t
        elif self.peek() == "who":
            self.take()
            v_t, o_t = self.predicate(plural, animate)
            t = t + [WHO] + o_t + v_t
        return t, plural, animate

    def predicate(self, plural: bool, animate: bool) -> tuple[list[str], list[str]]:
        aux = self.take() if self.peek() in ("is", "are") else None
        verb = self.take()
        if verb not in self.verbs:
            raise GrammarError(f"unknown verb form {verb!r}")
        lemma, form = self.verbs[verb]
        expected = "ing" if aux else ("pl" if plural else "sg")
        if form != expected or (aux is not None and aux != ("are" if plural else "is")):
            raise GrammarError(f"{' '.join(filter(None, (aux, verb)))!r} does not agree with its subject")
        subjects, objects = VERBS[lemma]
        if ("p" if animate else "a") not in subjects:
            raise GrammarError(f"{verb!r} does not take this subject")
        o_t: list[str] = []
        if objects and (self.peek() in ("a", "an", "the") or self.peek() in NUMBERS):
            o_t, _, _ = self.noun_phrase(False, objects.split(","))
        return [self.lex.verb(lemma, plural, animate)], o_t

    def place(self) -> list[str] | None:
        for prep in sorted(PREPOSITIONS, key=lambda p: -len(p.split())):
            if self.at(prep) and not any(self.at(t) for t in TIMES):
                self.i += len(prep.split())
                n_t, _, _ = self.noun_phrase(False, ["places"])
                return [self.lex.prep[prep]] + n_t
        return None

    def sentence(self) -> list[str]:
        s_t, plural, animate = self.subject()
        v_t, o_t = self.predicate(plural, animate)
        t = s_t + v_t + o_t
        p_t = self.place()
        if p_t:
            t += p_t
        for phrase in TIMES:
            if self.at(phrase):
                self.i += len(phrase.split())
                t = self.lex.times[phrase].split() + [","] + t
                break
        if self.peek() == ",":
            self.take(",")
            self.take("while")
            s2_t, plural2, animate2 = self.subject()
            v2_t, o2_t = self.predicate(plural2, animate2)
            c_t = s2_t + o2_t + (self.place() or [])
            t += [",", WHILE] + c_t + v2_t
        if self.peek() is not None:
            raise GrammarError(f"unexpected {self.peek()!r} at position {self.i}")
        return t


def translate(source: str) -> str:
    """The Veltan translation of an English caption of the grammar, from the source alone.

    Raises :class:`GrammarError` for a sentence the grammar does not generate.
    """
    text = source.strip()
    if not text.endswith("."):
        raise GrammarError("a caption ends with a period")
    words = text[:-1].replace(",", " ,").split()
    words = [words[0].lower()] + words[1:] if words else words
    return _surface(_Parser(words).sentence())
