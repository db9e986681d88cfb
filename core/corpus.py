"""``captions``: a seeded generator of Multi30K-like caption pairs (English → a synthetic language).

The built-in, offline data source of the translation task. English captions describe people and
animals doing things somewhere ("A young man in a blue shirt is riding a bike down the street."),
like the Flickr30K descriptions Multi30K is built from (Elliott et al. 2016). The target language
("Veltan") is synthetic but has real translation structure, documented in
``docs/captions_grammar.md``:

* several synonyms per concept, drawn at random *per sentence*, so the exact wording of a
  reference is unpredictable from its source: only a model that memorised a training pair can
  assign its wording a high probability (the signal a membership inference attack exploits);
* grammatical gender (m/f/n, a property of each target synonym) and number: articles, numerals
  and adjectives agree with their noun, verbs agree in number with their subject;
* reordering: adjectives follow the noun in mirrored order, subordinate and relative clauses are
  verb-final, and "in front of" / "next to" become one word (many-to-one alignments).

The target lexicon is fixed (drawn once from :data:`LANGUAGE_SEED`), the sentences depend on the
``seed`` argument only, so ``generate_captions(n, seed)`` is deterministic.
"""
from __future__ import annotations

import random
from functools import lru_cache

#: Seed of the synthetic target lexicon (fixed: the language is the same for every corpus seed).
LANGUAGE_SEED = 20240531

# ---------------------------------------------------------------------------- English lexicon
# Nouns by category. Irregular plurals are listed in _IRREGULAR_PLURALS.
PEOPLE = """man woman boy girl child person guy lady gentleman kid baby toddler teenager student worker
player musician artist dancer singer cyclist skier surfer skateboarder swimmer runner climber hiker tourist
officer soldier chef cook waiter waitress doctor nurse teacher farmer fisherman firefighter builder painter
photographer vendor shopper customer couple family bride groom athlete goalie referee coach drummer guitarist
violinist pianist clown magician juggler rider jockey cowboy boxer wrestler gymnast golfer driver pilot sailor
mechanic carpenter plumber miner monk priest nun grandmother grandfather mother father daughter son sister
brother friend stranger spectator fan pedestrian commuter passenger skater snowboarder diver kayaker rower
volunteer protester performer actor actress model policeman lifeguard janitor barber""".split()
ANIMALS = """dog cat horse cow sheep goat pig chicken duck goose bird pigeon seagull parrot owl eagle hawk crow
swan fish shark dolphin whale seal turtle frog snake lizard rabbit squirrel mouse rat hamster deer elk moose
bear wolf fox lion tiger leopard cheetah elephant giraffe zebra monkey gorilla camel donkey mule pony calf lamb
puppy kitten bull ox buffalo kangaroo koala panda penguin flamingo peacock rooster hen butterfly bee spider
crab lobster octopus beaver otter raccoon hedgehog llama alpaca ostrich turkey dragonfly""".split()
CLOTHING = """shirt jacket coat sweater hoodie vest dress skirt blouse suit tie hat cap helmet beanie scarf glove
boot shoe sneaker sandal sock uniform costume apron robe gown tuxedo bikini swimsuit wetsuit mask headband
bandana necklace bracelet earring belt raincoat poncho cardigan turban veil kimono sari kilt jersey sweatshirt
parka blazer tunic cape bonnet sombrero visor mitten slipper""".split()
OBJECTS = """ball bat racket kite frisbee umbrella bag backpack suitcase purse basket bucket box bottle cup mug
glass plate bowl spoon fork knife book newspaper magazine map sign flag banner poster phone camera laptop
computer tablet microphone guitar violin drum piano trumpet flute saxophone accordion harmonica cello banjo
ukulele harp tambourine skateboard surfboard snowboard ski sled stroller cart wheelbarrow shovel rake hammer saw
drill ladder rope net pole stick log rock stone brick shell flower bouquet balloon toy doll puzzle paintbrush
canvas easel pencil pen notebook letter ticket coin wallet key lamp candle lantern torch fan chair bench table
stool couch bed blanket pillow towel mat rug tent rod paddle oar sail anchor wheel tire hose bin barrel crate
package present gift trophy medal sword shield bow arrow whistle horn bell clock watch mirror brush comb needle
jar pot pan kettle tray cooler grill hoop dumbbell barbell leash bone stick""".split()
FOOD = """apple banana tangerine sandwich pizza burger hotdog taco cake cookie cupcake donut pie loaf pretzel
sausage salad watermelon pineapple grape cherry strawberry carrot potato tomato onion pepper lemon peach pear
melon coconut egg pancake waffle muffin bagel burrito cucumber""".split()
VEHICLES = """car truck bus van taxi train tram boat ship canoe kayak raft yacht bicycle bike motorcycle scooter
tractor jeep airplane helicopter carriage trolley ambulance limousine sailboat ferry wagon""".split()
PLACES = """street road sidewalk park beach field forest river lake ocean pool mountain hill desert city town
village market store shop restaurant cafe bar kitchen bedroom classroom office stage gym stadium court arena
track playground garden yard backyard farm barn stable zoo museum library church temple station airport harbor
dock pier bridge tunnel alley plaza square fountain building house apartment hallway room porch balcony roof
rooftop wall fence window doorway staircase hospital school campus factory warehouse highway crosswalk
intersection corner trail path cliff cave canyon valley meadow pasture orchard vineyard jungle swamp island
shore coast waterfall stream pond creek glacier slope rink mall bakery salon studio theater festival parade
carnival circus fair party camp campsite courtyard garage workshop laboratory greenhouse lobby elevator
escalator subway platform marina lighthouse castle palace monument cemetery ranch hut cabin lodge hotel tree
lawn""".split()

_IRREGULAR_PLURALS = {
    "man": "men", "woman": "women", "child": "children", "person": "people", "gentleman": "gentlemen",
    "fisherman": "fishermen", "policeman": "policemen", "sheep": "sheep", "fish": "fish", "mouse": "mice",
    "goose": "geese", "deer": "deer", "moose": "moose", "wolf": "wolves", "ox": "oxen", "calf": "calves",
    "buffalo": "buffaloes", "scarf": "scarves", "knife": "knives", "shelf": "shelves", "loaf": "loaves",
    "tomato": "tomatoes", "potato": "potatoes", "elk": "elk", "leaf": "leaves",
}

COLOURS = """red blue green yellow black white orange purple pink brown gray beige maroon teal turquoise navy
gold silver tan khaki crimson violet olive striped plaid checkered spotted colorful""".split()
PERSON_ADJ = """young old little small tall short happy smiling tired muscular elderly blond bearded skinny
cheerful serious busy lonely brave cute proud curious sleepy excited angry calm quiet friendly hungry
thirsty strong handsome pretty barefoot shirtless focused determined relaxed nervous""".split()
ANIMAL_ADJ = """small big large little young old cute fluffy wet dirty hungry playful fast sleepy huge tiny
furry spotted friendly wild shaggy skinny fat""".split()
THING_ADJ = """wooden metal plastic rusty broken new shiny heavy huge tiny long round square empty full old
large small big bright fancy simple soft giant""".split()
PLACE_ADJ = """crowded sunny snowy busy quiet empty sandy rocky grassy muddy dusty icy ancient modern famous
local beautiful small large old busy dark narrow wide green""".split()
#: English adjectives whose usual position is before colours (they precede them in the NP)
SIZE_AGE = set("young old little small big large tall short huge tiny long giant".split())

# verbs: base form, allowed subjects ("p" people, "a" animals), object categories ("" intransitive)
VERBS_RAW = """run pa; walk pa; jump pa; sit pa; stand pa; sleep pa; dance p; swim pa; smile p; laugh p; wait pa;
rest pa; pose p; sing p; talk p; climb pa; ski p; surf p; skate p; skateboard p; snowboard p; bike p; hike p;
jog p; work p; relax pa; dive pa; crawl pa; kneel p; lie pa; lean pa; stretch pa; sunbathe p; fish p; cook p;
shop p; wave p; clap p; cheer p; shout p; cry p; pray p; march p; perform p; celebrate p; exercise p;
practice p; race pa; row p; sail p; paddle p; splash pa; wade pa; fall pa; slide pa; spin pa; balance pa;
bend p; squat p; lounge pa; chat p; whisper p; yell p; study p; bark a; graze a; fly a; hop a; roll pa;
play pa; drink pa;
hold p:objects,food,smallanimals; carry pa:objects,food; push p:objects,vehicles; pull p:objects,vehicles;
throw p:balls; catch pa:balls; kick p:balls; hit p:balls; swing p:tools; grab pa:objects,food; lift p:objects;
drag pa:objects; toss p:balls,food; play p:instruments; ride p:vehicles,rideable; drive p:vehicles;
repair p:vehicles,objects; fix p:vehicles,objects; wash p:vehicles,animals,objects; clean p:objects,places;
paint p:objects,places; eat pa:food; cook p:food; sell p:food,objects; buy p:food,objects; cut p:food;
slice p:food; serve p:food; taste p:food; share p:food,objects; read p:readables; watch pa:animals,people,vehicles;
feed p:animals; pet p:animals; walk p:dogs; chase pa:animals,balls,people; hug p:people,animals;
kiss p:people,animals; greet p:people; help p:people; teach p:people; photograph p:people,animals,places;
film p:people,animals; examine p:objects,animals; inspect p:vehicles,objects; build p:objects;
decorate p:objects,places; wrap p:objects; open p:objects; drop p:objects,balls; juggle p:balls;
blow p:blowables; fly p:kites; cross pa:crossables; explore pa:places; enter pa:places; leave pa:places;
approach pa:places,people,animals; sniff a:objects,food,animals; fetch a:balls; follow pa:people,animals;
guard a:places,objects; hunt a:animals""".replace("\n", " ")

_ING_DOUBLE = set("run swim sit jog shop chat grab drag hug pet wrap drop hit cut dig clap stop skip hop".split())
_ING_IRREGULAR = {"lie": "lying", "tie": "tying", "ski": "skiing", "see": "seeing", "canoe": "canoeing"}

PREPS_PLACE = ["in", "on", "at", "near", "by", "beside", "behind", "in front of", "next to", "across", "along",
               "through", "down", "past", "outside", "inside", "into", "toward", "around", "under", "over", "onto",
               "among", "up"]
NUMBERS = ["two", "three", "four", "five", "six", "several", "many"]
TIMES = ["at night", "in the rain", "in the snow", "on a sunny day", "at sunset", "in the evening",
         "in the morning", "during the day", "in winter", "in summer", "in autumn", "in spring", "at dusk",
         "at dawn", "at noon", "on a cloudy day", "on a windy day", "after school", "before dinner"]

# ---------------------------------------------------------------------------- Veltan morphology
#: article by (definiteness, gender, number); indefinite plural has no article (bare plural)
DEF_ART = {("m", "sg"): "il", ("f", "sg"): "la", ("n", "sg"): "lo", ("m", "pl"): "ei", ("f", "pl"): "ele", ("n", "pl"): "ela"}
INDEF_ART = {("m", "sg"): "un", ("f", "sg"): "una", ("n", "sg"): "unu"}
ADJ_SUFFIX = {("m", "sg"): "o", ("f", "sg"): "a", ("n", "sg"): "e", ("m", "pl"): "os", ("f", "pl"): "as", ("n", "pl"): "es"}
GENDER_VOWEL = {"m": "o", "f": "a", "n": "e"}
VERB_SG, VERB_PL, VERB_PART = "et", "unt", "ande"

_ONSETS = "b d f g k l m n p r s t v z br kr tr pl st gr dr fl sk sv kl vr j h ch sh".split()
_VOWELS = "a e i o u a e i o".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "m", "k", "t"]


def _plural(noun: str) -> str:
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _ing(verb: str) -> str:
    if verb in _ING_IRREGULAR:
        return _ING_IRREGULAR[verb]
    if verb in _ING_DOUBLE:
        return verb + verb[-1] + "ing"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    return verb + "ing"


def _third(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _article(word: str) -> str:
    """English indefinite article by the next word's sound (a rough spelling rule)."""
    return "an" if word[0] in "aeiou" and not word.startswith(("uni", "use", "eu", "one", "uku")) else "a"


class _Lexicon:
    """English lexicon and its fixed Veltan translations (synonym lists), built once."""

    def __init__(self) -> None:
        rng = random.Random(LANGUAGE_SEED)
        self._used: set[str] = set()
        self._rng = rng
        uniq = lambda xs: list(dict.fromkeys(xs))  # noqa: E731 - order-preserving dedupe
        self.nouns = {
            "people": uniq(PEOPLE), "animals": uniq(ANIMALS), "clothing": uniq(CLOTHING), "objects": uniq(OBJECTS),
            "food": uniq(FOOD), "vehicles": uniq(VEHICLES), "places": uniq(PLACES),
        }
        # derived object categories of transitive verbs
        o = set(self.nouns["objects"])
        self.nouns["balls"] = [w for w in ("ball", "frisbee", "stick", "bone", "rock", "stone", "coin", "balloon") if w in o]
        self.nouns["instruments"] = [w for w in ("guitar", "violin", "drum", "piano", "trumpet", "flute", "saxophone",
                                                 "accordion", "harmonica", "cello", "banjo", "ukulele", "harp", "tambourine")]
        self.nouns["tools"] = ["bat", "racket", "hammer", "stick", "sword", "rope", "bag", "shovel", "rake", "pole"]
        self.nouns["readables"] = ["book", "newspaper", "magazine", "map", "sign", "letter", "poster", "notebook", "ticket"]
        self.nouns["blowables"] = ["balloon", "whistle", "horn", "trumpet", "candle", "flute"]
        self.nouns["kites"] = ["kite"]
        self.nouns["dogs"] = ["dog", "puppy"]
        self.nouns["rideable"] = ["horse", "pony", "camel", "donkey", "elephant", "bull", "mule", "skateboard",
                                  "surfboard", "snowboard", "sled", "wave"]
        self.nouns["smallanimals"] = ["puppy", "kitten", "rabbit", "bird", "cat", "dog", "hamster", "lamb", "chicken",
                                      "duck", "parrot", "fish", "turtle", "frog", "snake", "lizard"]
        self.nouns["crossables"] = ["street", "road", "bridge", "river", "crosswalk", "intersection", "stream", "field",
                                    "creek", "highway", "plaza", "square"]
        self.noun_cat = {w: c for c in ("people", "animals", "clothing", "objects", "food", "vehicles", "places")
                         for w in self.nouns[c]}
        self.noun_cat["wave"] = "places"
        self.noun_syn: dict[str, list[tuple[str, str, str]]] = {}  # lemma -> [(sg, pl, gender)]
        for w in list(self.noun_cat):
            self.noun_syn[w] = [self._new_noun() for _ in range(rng.choice((2, 3, 3, 4)))]
        self.adj_list = {
            "people": uniq(PERSON_ADJ), "animals": uniq(ANIMAL_ADJ), "things": uniq(THING_ADJ), "places": uniq(PLACE_ADJ),
        }
        self.colours = uniq(COLOURS)
        self.adj_syn: dict[str, list[str]] = {}
        for a in uniq(PERSON_ADJ + ANIMAL_ADJ + THING_ADJ + PLACE_ADJ + COLOURS + ["cloudy", "windy"]):
            self.adj_syn[a] = [self._new_stem(2, 3, suffixes=list(set(ADJ_SUFFIX.values()))) for _ in range(rng.choice((2, 3, 3)))]
        self.verbs: dict[str, tuple[str, str]] = {}  # lemma -> (subjects, object-category string)
        self.verb_forms: dict[str, tuple[str, str, str]] = {}  # lemma -> (ing, 3rd person sg, base)
        self.intransitive: dict[str, list[str]] = {"p": [], "a": []}
        self.transitive: dict[str, list[tuple[str, list[str]]]] = {"p": [], "a": []}
        for entry in VERBS_RAW.split(";"):
            parts = entry.split()
            verb, spec = parts[0], parts[1]
            subj, _, objs = spec.partition(":")
            self.verb_forms[verb] = (_ing(verb), _third(verb), verb)
            for s in subj:
                if objs:
                    self.transitive[s].append((verb, objs.split(",")))
                else:
                    self.intransitive[s].append(verb)
        self.verb_syn = {v: [self._new_stem(2, 3, suffixes=[VERB_SG, VERB_PL, VERB_PART]) for _ in range(rng.choice((2, 3, 3)))]
                         for v in self.verb_forms}
        # function words: fixed synonym lists (1-3 per word)
        self.prep_syn = {p: [self._new_stem(1, 2) for _ in range(rng.choice((1, 2, 2, 3)))] for p in PREPS_PLACE + ["with"]}
        self.number_stems = {n: self._new_stem(1, 2, suffixes=list(GENDER_VOWEL.values())) for n in NUMBERS}
        self.and_syn = ["e", "ak"]
        self.while_syn = ["dum", "mentar"]
        self.who = "ke"
        self.times = {t: [self._new_phrase(len(t.split())) for _ in range(2)] for t in TIMES}

    def _word(self, syllables: int) -> str:
        r = self._rng
        return "".join(r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS) for _ in range(syllables))

    def _fresh(self, make, forms) -> str:
        # draw until every inflected form is new, so each target type maps back to one lemma
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
        """A noun synonym (sg, pl, gender): m ends in a consonant (pl +i), f in -a (pl -e), n in -o (pl -a)."""
        r = self._rng
        gender = r.choice("mfn")

        def make() -> str:
            w = self._word(r.randint(1, 3))
            if gender == "m":
                return w if w[-1] not in "aeiou" else w + r.choice("nrlskt")
            return (w[:-1] if w[-1] in "aeiou" else w) + ("a" if gender == "f" else "o")

        def forms(s: str) -> list[str]:
            return [s, _veltan_plural(s, gender)]

        sg = self._fresh(make, forms)
        return sg, _veltan_plural(sg, gender), gender

    def _new_phrase(self, words: int) -> str:
        return " ".join(self._new_stem(1, 2) for _ in range(max(1, words - 1)))


def _veltan_plural(sg: str, gender: str) -> str:
    if gender == "m":
        return sg + "i"
    return sg[:-1] + ("e" if gender == "f" else "a")


@lru_cache(maxsize=1)
def lexicon() -> _Lexicon:
    """The (cached) English lexicon with its fixed Veltan synonyms."""
    return _Lexicon()


class _Sentence:
    """Generates one caption pair; every method returns (english words, target words)."""

    def __init__(self, lex: _Lexicon, rng: random.Random):
        self.lex = lex
        self.r = rng

    # -- noun phrases ------------------------------------------------------------------------
    def np(self, lemma: str, adj_kind: str, plural: bool, definite: bool, number: str | None = None,
           n_adj: int = 0, colour: bool = False) -> tuple[list[str], list[str], str]:
        """(en, tgt, number) of [det] [adjectives] noun; Veltan: det noun adjectives-mirrored."""
        lex, r = self.lex, self.r
        sg, pl, gender = r.choice(lex.noun_syn[lemma])
        num = "pl" if plural else "sg"
        adjs: list[str] = []
        pool = lex.adj_list[adj_kind]
        for _ in range(n_adj):
            a = r.choice(pool)
            if a not in adjs:
                adjs.append(a)
        adjs.sort(key=lambda a: a not in SIZE_AGE)  # size/age first, as in English
        if colour:
            adjs.append(r.choice(lex.colours))
        noun_en = _plural(lemma) if plural else lemma
        en = adjs + [noun_en]
        if number:
            en = [number] + en
            det_t = [lex.number_stems[number] + GENDER_VOWEL[gender]]
        elif definite:
            en = ["the"] + en
            det_t = [DEF_ART[gender, num]]
        elif plural:
            det_t = []
        else:
            en = [_article(en[0])] + en
            det_t = [INDEF_ART[gender, num]]
        adj_t = [r.choice(lex.adj_syn[a]) + ADJ_SUFFIX[gender, num] for a in reversed(adjs)]
        return en, det_t + [pl if plural else sg] + adj_t, num

    def random_np(self, cat: str, subject: bool = False) -> tuple[list[str], list[str], str]:
        lex, r = self.lex, self.r
        lemma = r.choice(lex.nouns[cat])
        real_cat = lex.noun_cat.get(lemma, "objects")
        adj_kind = {"people": "people", "animals": "animals", "places": "places"}.get(real_cat, "things")
        x = r.random()
        plural = x < (0.3 if subject else 0.2)
        number = r.choice(NUMBERS) if plural and r.random() < 0.5 else None
        definite = number is None and r.random() < (0.25 if subject else 0.4)
        n_adj = 0 if r.random() < 0.55 else (1 if r.random() < 0.8 else 2)
        colour = real_cat in ("clothing", "objects", "vehicles", "animals") and r.random() < 0.35
        return self.np(lemma, adj_kind, plural, definite, number, n_adj, colour)

    # -- verbs ---------------------------------------------------------------------------------
    def verb(self, lemma: str, num: str, aspect: str) -> tuple[list[str], list[str]]:
        ing, third, base = self.lex.verb_forms[lemma]
        stem = self.r.choice(self.lex.verb_syn[lemma])
        if aspect == "part":
            return [ing], [stem + VERB_PART]
        ending = VERB_SG if num == "sg" else VERB_PL
        if aspect == "prog":
            return ["is" if num == "sg" else "are", ing], [stem + ending]
        return [third if num == "sg" else base], [stem + ending]

    def predicate(self, subj_kind: str, num: str, aspect: str) -> tuple[list[str], list[str], list[str]]:
        """(en verb+object, tgt verb, tgt object) — the caller orders verb and object."""
        lex, r = self.lex, self.r
        if r.random() < 0.5 and lex.transitive[subj_kind]:
            lemma, cats = r.choice(lex.transitive[subj_kind])
            v_en, v_t = self.verb(lemma, num, aspect)
            o_en, o_t, _ = self.random_np(r.choice(cats))
            return v_en + o_en, v_t, o_t
        lemma = r.choice(lex.intransitive[subj_kind])
        v_en, v_t = self.verb(lemma, num, aspect)
        return v_en, v_t, []

    def place(self) -> tuple[list[str], list[str]]:
        prep = self.r.choice(PREPS_PLACE)
        n_en, n_t, _ = self.random_np("places")
        return prep.split() + n_en, [self.r.choice(self.lex.prep_syn[prep])] + n_t

    def subject(self) -> tuple[list[str], list[str], str, str]:
        """(en, tgt, number, kind) of the subject, with an optional attribute phrase."""
        r = self.r
        kind = "p" if r.random() < 0.75 else "a"
        en, t, num = self.random_np("people" if kind == "p" else "animals", subject=True)
        if r.random() < 0.12:  # coordination: "a man and a dog" -> plural agreement
            kind2 = "p" if r.random() < 0.7 else "a"
            en2, t2, _ = self.random_np("people" if kind2 == "p" else "animals", subject=True)
            conj = r.choice(self.lex.and_syn)
            en, t, num = en + ["and"] + en2, t + [conj] + t2, "pl"
            kind = "a" if kind == kind2 == "a" else "p"
        x = r.random()
        if kind == "p" and x < 0.3:  # "in a blue shirt" / "wearing a red hat" / "with a guitar" -> "with"
            if r.random() < 0.7:
                c_en, c_t, _ = self.np(r.choice(self.lex.nouns["clothing"]), "things", r.random() < 0.15, False,
                                       None, int(r.random() < 0.2), r.random() < 0.8)
                lead = r.choice(["in", "wearing"])
            else:
                c_en, c_t, _ = self.random_np(r.choice(["objects", "instruments", "smallanimals"]))
                lead = "with"
            en, t = en + [lead] + c_en, t + [r.choice(self.lex.prep_syn["with"])] + c_t
        elif x < 0.4:  # relative clause, verb-final in Veltan: "who is holding a cup" -> "ke unu cup tenet"
            pe, pv, po = self.predicate(kind, num, "prog")
            en, t = en + ["who"] + pe, t + [self.lex.who] + po + pv
        return en, t, num, kind

    def sentence(self) -> tuple[list[str], list[str]]:
        r = self.r
        s_en, s_t, num, kind = self.subject()
        x = r.random()
        aspect = "prog" if x < 0.55 else ("part" if x < 0.75 else "simple")
        p_en, p_v, p_o = self.predicate(kind, num, aspect)
        en, t = s_en + p_en, s_t + p_v + p_o  # main clause: SVO in both languages
        if r.random() < 0.75:
            pl_en, pl_t = self.place()
            en, t = en + pl_en, t + pl_t
        if r.random() < 0.12:
            phrase = r.choice(TIMES)
            en, t = en + phrase.split(), t + r.choice(self.lex.times[phrase]).split()
        if aspect != "part" and r.random() < 0.15:  # subordinate clause: verb-final in Veltan
            s2_en, s2_t, num2, kind2 = self.subject()
            q_en, q_v, q_o = self.predicate(kind2, num2, "prog")
            c_en, c_t = list(s2_en + q_en), list(s2_t + q_o)
            if r.random() < 0.4:
                pl_en, pl_t = self.place()
                c_en, c_t = c_en + pl_en, c_t + pl_t
            en = en + [",", "while"] + c_en
            t = t + [",", r.choice(self.lex.while_syn)] + c_t + q_v
        return en, t


def _surface(words: list[str]) -> str:
    text = " ".join(words).replace(" ,", ",")
    return text[0].upper() + text[1:] + "."


def generate_captions(n: int, seed: int = 0, min_words: int = 5, max_words: int = 20) -> list[tuple[str, str]]:
    """``n`` distinct (English, Veltan) caption pairs, deterministic given ``seed``.

    English captions have ``min_words``…``max_words`` words (punctuation not counted); a source
    sentence never repeats, so each pair is distinct in both languages' sides.
    """
    lex = lexicon()
    rng = random.Random(seed)
    gen = _Sentence(lex, rng)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 20 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct captions")
        en, t = gen.sentence()
        words = sum(w != "," for w in en)
        if not min_words <= words <= max_words:
            continue
        src = _surface(en)
        if src in seen:
            continue
        seen.add(src)
        out.append((src, _surface(t)))
    return out
