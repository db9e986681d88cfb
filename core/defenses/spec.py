"""A defended point's description: :class:`DefenseSpec` (a mechanism at one value, its draws and seed, the
mechanism's constants) and the defense schema version its key carries. Not part of the experiment config: its
key joins the config hash in the cache, so sliding a value never retrains (:mod:`core.defenses.defender`)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace

from core.defenses.registry import Mechanism
from core.defenses.registry import get as get_mechanism
from core.foundations.config import MAX_DRAWS
from core.foundations.errors import ConfigError

ATTACKERS = ("naive", "adaptive", "both")
#: the fields of a point that the naive attacker's scoring gives (:meth:`Defender._naive`)
NAIVE_FIELDS = ("attack", "attacks", "epsilon_lower_bound", "epsilon_lower_bound_detail", "records")
#: bump when the meaning of a stored defended point changes
DEFENSE_SCHEMA = 4  # 2: points carry LiRA and RMIA; 3: and the registry's quantile, label-only and gap attacks;
#: 4: per-record scores, APE and cross-entropy stored exactly (were rounded to 6 decimals)


@dataclass(frozen=True)
class DefenseSpec:
    """One defended point: a mechanism at one value, and how it is evaluated.

    Attributes:
        mechanism: a registered mechanism's name (:mod:`core.defenses.defender.mechanisms`): ``dirichlet``
            (outputs x ~ Dir(k·p), paper 001 eq. 4), ``gpm`` (weights θ + N(0, σ²I), paper 000
            Algorithm 1), or any other registered one.
        value: the mechanism's parameter (k > 0 for the Dirichlet mechanism, σ ≥ 0 for the GPM).
        draws: independent draws of the mechanism; numbers are their mean (± std).
        seed: seeds the mechanism's randomness (draw d uses (seed, d, role)).
        eta: Dirichlet floor: p̃ = (1 − nη)·p + η keeps p inside the simplex (Lemma 1's η).
        tau, b: Lemma 1's τ and adjacency radius b (the study gives none: documented defaults).
        delta: the GPM's ε is reported at this δ (the study's 1e-4).
    """

    mechanism: str
    value: float
    draws: int = 1
    seed: int = 0
    eta: float = 1e-6
    tau: float = 1e-6
    b: float = 0.1
    delta: float = 1e-4

    def validate(self) -> "DefenseSpec":
        self.mechanism_class.parameter.check(self.value)  # an unknown mechanism: ConfigError
        if not isinstance(self.draws, int) or isinstance(self.draws, bool) or not 1 <= self.draws <= MAX_DRAWS:
            raise ConfigError(f"draws must be an integer in 1..{MAX_DRAWS}, got {self.draws!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")
        for name in ("eta", "tau", "b", "delta"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float)) and math.isfinite(x) and 0 < x < 1):
                raise ConfigError(f"{name} must lie in (0, 1), got {x!r}")
        return self

    @property
    def mechanism_class(self) -> Mechanism:
        """The registered mechanism (:class:`ConfigError` for an unknown name)."""
        return get_mechanism(self.mechanism)

    @property
    def value_name(self) -> str:
        return self.mechanism_class.parameter.symbol

    @property
    def key(self) -> str:
        """Stable content hash of the spec (with the defense schema version)."""
        payload = json.dumps({"schema": DEFENSE_SCHEMA, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def draw_key(self) -> str:
        """The key of what one draw depends on: the spec's but for the number of draws (draw d is seeded by
        (seed, d, role), the same in a point of any number of draws), so a one-draw point's noisy models and
        answers serve draw 0 of the full point (the Defenses page computes the one, then the other)."""
        return replace(self, draws=1).key

    def at(self, value: float) -> "DefenseSpec":
        """The same spec at another value."""
        return replace(self, value=float(value))
