"""The captions corpus (core.data.corpus, docs/captions_grammar.md): determinism, the documented grammar,
context-decided synonyms, agreement, reordering, and the held-out split of unseen combinations."""
from __future__ import annotations

import pytest

from core.data.corpus import (
    ADJ_SUFFIX,
    AND,
    COLOURS,
    DEF_ART,
    INDEF_ART,
    NUMBERS,
    PREPOSITIONS,
    TIMES,
    WHILE,
    WHO,
    WITH,
    GrammarError,
    generate_caption_pairs,
    generate_captions,
    lexicon,
    reserved,
    translate,
)
from core.data.translation_records import tokenize


@pytest.fixture(scope="module")
def pairs():
    return generate_caption_pairs(6000, seed=0)


def test_deterministic_and_distinct():
    """(Its speed is a benchmark's to measure, not a test's.)"""
    a = generate_captions(3000, seed=7)
    assert a == generate_captions(3000, seed=7)
    assert a != generate_captions(3000, seed=8)
    assert len({s for s, _ in a}) == 3000


def test_every_target_is_the_documented_translation_of_its_source(pairs):
    """An independent parser of the English grammar, applying the documented rules, reproduces every target."""
    for p in pairs:
        assert translate(p.source) == p.target, p.source
    with pytest.raises(GrammarError):
        translate("A man is running quickly.")
    for wrong in ("A banana is running in the park.",  # a food is no subject
                  "A dog is reading a book.",  # an animal does not read
                  "A man are running.", "Two man are running.", "A man is eating a car."):
        with pytest.raises(GrammarError):
            translate(wrong)


def test_closed_vocabulary_small_enough_to_learn(pairs):
    src = {w for p in pairs for w in tokenize(p.source)}
    tgt = {w for p in pairs for w in tokenize(p.target)}
    assert 200 <= len(src) <= 400 and 300 <= len(tgt) <= 700
    lengths = [sum(t.isalnum() for t in tokenize(p.source)) for p in pairs]
    assert min(lengths) >= 4 and max(lengths) <= 24


def _noun_forms():
    lex = lexicon()
    subject, oblique, gender = {}, {}, {}
    for lemma, ((s_sg, s_pl, s_g), (o_sg, o_pl, o_g)) in lex.noun_syn.items():
        for form, g in ((s_sg, s_g), (s_pl, s_g)):
            subject[form], gender[form] = lemma, g
        for form, g in ((o_sg, o_g), (o_pl, o_g)):
            oblique[form], gender[form] = lemma, g
    return subject, oblique, gender


def test_synonyms_are_decided_by_role_and_animacy(pairs):
    lex = lexicon()
    subject, oblique, _ = _noun_forms()
    assert not set(subject) & set(oblique)
    # "A dog ..." opens with the subject form; "... a dog." at the end of a sentence uses the oblique form
    opening = {tokenize(p.target)[1] for p in pairs if p.source.startswith("A dog ") and "," not in p.target}
    assert opening == {lex.noun_syn["dog"][0][0]}
    # a verb's form follows its subject's animacy: "A man is eating" vs "A dog is eating"
    person_eat, animal_eat = (stem + "et" for stem in lex.verb_stem["eat"])
    assert any(person_eat in tokenize(p.target) for p in pairs if p.source.startswith("A man is eating"))
    assert all(animal_eat not in tokenize(p.target) for p in pairs if p.source.startswith("A man is eating"))
    assert any(animal_eat in tokenize(p.target) for p in pairs if p.source.startswith("A dog is eating"))


def test_agreement_and_reordering(pairs):
    lex = lexicon()
    _, _, gender = _noun_forms()
    articles = {**{v: ("indef", g) for g, v in INDEF_ART.items()}, **{v: ("def", k) for k, v in DEF_ART.items()}}
    adjective_forms = {stem + suffix: key for stem in lex.adj_stem.values() for key, suffix in ADJ_SUFFIX.items()}
    colour_forms = {lex.adj_stem[c] + s for c in COLOURS for s in ADJ_SUFFIX.values()}
    checked = reordered = 0
    for p in pairs:
        toks = tokenize(p.target)
        for i, tok in enumerate(toks):
            if tok in articles and i + 1 < len(toks):
                noun = toks[i + 1]  # rule 1: the noun follows its article directly, modifiers after it
                assert noun in gender, (p.source, p.target)
                kind, key = articles[tok]
                g = key if kind == "indef" else key[0]
                assert g == gender[noun], (tok, noun, p.target)
                checked += 1
                # modifiers after the noun agree with it in gender and number
                j = i + 2
                while j < len(toks) and toks[j] in adjective_forms:
                    assert adjective_forms[toks[j]][0] == gender[noun], p.target
                    reordered += toks[j] in colour_forms
                    j += 1
    assert checked > 5000 and reordered > 500


def test_clauses_are_verb_final_and_time_moves_to_the_front(pairs):
    lex = lexicon()
    verb_forms = {stem + e for pair in lex.verb_stem.values() for stem in pair for e in ("et", "unt")}
    relative = while_clauses = fronted = 0
    for p in pairs:
        toks = tokenize(p.target)
        if f" {WHO} " in f" {' '.join(toks)} ":
            k = toks.index(WHO)
            tail = toks[k + 1 :]
            verbs_after = [i for i, t in enumerate(tail) if t in verb_forms]
            assert verbs_after, p.target
            # the relative clause's verb ends it: the next word is the main verb
            assert tail[verbs_after[0] + 1] in verb_forms, p.target
            relative += 1
        if WHILE in toks:
            assert toks[-2] in verb_forms, p.target  # "..., dum <subject> <object> <place> <verb>."
            while_clauses += 1
        phrase = next((t for t in TIMES if p.source.rstrip(".").endswith(t) or f"{t}," in p.source), None)
        if phrase:
            assert p.target.startswith(lex.times[phrase][0].upper() + lex.times[phrase][1:] + ","), p.target
            fronted += 1
    assert relative > 100 and while_clauses > 300 and fronted > 300
    # function words of the documented grammar
    all_tokens = {t for p in pairs for t in tokenize(p.target)}
    assert {AND, WHO, WHILE, WITH} <= all_tokens
    assert {lex.prep[p] for p in PREPOSITIONS} <= all_tokens
    assert {lex.number_stem[n] + v for n in NUMBERS for v in "oae"} & all_tokens


def test_heldout_split_holds_only_unseen_combinations_of_known_words():
    train = generate_caption_pairs(30000, seed=0)
    held = generate_caption_pairs(300, seed=0, split="heldout")
    train_combos = set().union(*(p.combinations for p in train))
    assert not any(reserved(*c) for c in train_combos)
    train_src = {w for p in train for w in tokenize(p.source)}
    train_tgt = {w for p in train for w in tokenize(p.target)}
    for p in held:
        new = {c for c in p.combinations if reserved(*c)}
        assert new and not new & train_combos  # at least one combination never seen in training
        assert set(tokenize(p.source)) <= train_src  # ... made of known words
        assert set(tokenize(p.target)) <= train_tgt
        assert translate(p.source) == p.target
    # the reserved adjective-noun pairs are visible in the text: "<adjective> [colour] <noun>"
    adj_noun = [c for p in held for c in p.combinations if c[0] == "adj_noun" and reserved(*c)]
    assert adj_noun
    with pytest.raises(ValueError, match="split"):
        generate_captions(3, split="validation")
