"""SensitivitySampler (paper 000, Algorithm 2; Rubinstein & Aldà 2017): an empirical estimate of
how far one training record can move the trained weights.

Repeat n times: draw N + 1 records d₁…d_{N+1} from the data source; D₁ = {d₁…d_N};
D₂ = D₁ with d_N replaced by d_{N+1}; train θ on D₁ and θ′ on D₂ **with the same
initialisation and data order** (otherwise ‖θ − θ′‖ measures the randomness of training, not
the record); Sᵢ = ‖θ − θ′‖₂ over the trainable parameters. S = maxᵢ Sᵢ. With n samples the
Gaussian privacy module calibrated on S is random-DP with confidence γ(n) (eq. 12).

Records are drawn from the victim's half of the data source (the curator's data), N = n_train,
so each model is trained exactly like the victim. Every pair is cached as soon as it is done,
so an interrupted run resumes where it stopped.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from ..cache import ArtifactCache
from ..config import ExperimentConfig
from ..pipeline import train_model
from ..tasks import get_task
from .gpm import random_dp_gamma


@dataclass
class SensitivityEstimate:
    """S = max of the n pairwise distances, with the distances themselves and γ(n)."""

    sensitivity: float
    distances: list[float]
    n: int
    gamma: float
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def parameter_distance(a: torch.nn.Module, b: torch.nn.Module) -> float:
    """‖θ_a − θ_b‖₂ over the trainable parameters (in float64)."""
    total = 0.0
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        total += float(((p.detach().double().cpu() - q.detach().double().cpu()) ** 2).sum())
    return total**0.5


def neighbouring_sets(pool: np.ndarray, n_train: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(D₁, D₂): n_train records drawn from ``pool``; D₂ = D₁ with its last record replaced by a fresh one."""
    if len(pool) < n_train + 1:
        raise ValueError(f"SensitivitySampler needs n_train + 1 = {n_train + 1} records, the pool has {len(pool)}")
    drawn = rng.choice(pool, size=n_train + 1, replace=False)
    d1 = drawn[:n_train]
    d2 = np.concatenate([drawn[: n_train - 1], drawn[n_train:]])
    return d1, d2


def sensitivity_sampler(n: int, pair_distance: Callable[[int], float],
                        on_pair: Callable[[int, int], None] | None = None) -> SensitivityEstimate:
    """Algorithm 2 on any learner: ``pair_distance(i)`` draws the i-th pair of neighbouring
    training sets, trains on both with the same randomness and returns ‖θ − θ′‖₂; S = max."""
    if n < 1:
        raise ValueError(f"SensitivitySampler needs n >= 1 pairs, got {n}")
    start = time.perf_counter()
    distances = []
    for i in range(n):
        distances.append(float(pair_distance(i)))
        if on_pair:
            on_pair(i + 1, n)
    return SensitivityEstimate(max(distances), distances, n, random_dp_gamma(n), time.perf_counter() - start)


def sample_sensitivity(
    cfg: ExperimentConfig,
    n: int,
    cache: ArtifactCache | None = None,
    on_pair: Callable[[int, int], None] | None = None,
) -> SensitivityEstimate:
    """Algorithm 2 with ``n`` pairs for the model of ``cfg``; each pair cached under the training hash.

    ``on_pair(done, n)`` reports progress after every pair.
    """
    cache = cache or ArtifactCache()
    task = get_task(cfg.task)
    data = task.load(cfg)

    def pair_distance(i: int) -> float:
        key = cache.key("sensitivity", cfg.training_hash, "pair", i)
        stored = cache.get_json(key)
        if isinstance(stored, dict) and isinstance(stored.get("distance"), (int, float)):
            return float(stored["distance"])
        rng = np.random.default_rng([cfg.seed, 0x5E45, i])
        d1, d2 = neighbouring_sets(np.asarray(data.victim_pool), cfg.n_train, rng)
        seed = cfg.seed * 7919 + 7 * 104729 + i  # the same for both models of the pair
        d = parameter_distance(train_model(task, cfg, data, d1, seed), train_model(task, cfg, data, d2, seed))
        cache.put_json(key, {"distance": d})
        return d

    return sensitivity_sampler(n, pair_distance, on_pair)


def cached_sensitivity(cfg: ExperimentConfig, n: int, cache: ArtifactCache | None = None) -> SensitivityEstimate | None:
    """The estimate with ``n`` pairs if every pair is already cached, else None (never trains)."""
    cache = cache or ArtifactCache()
    distances = []
    for i in range(n):
        stored = cache.get_json(cache.key("sensitivity", cfg.training_hash, "pair", i))
        if not (isinstance(stored, dict) and isinstance(stored.get("distance"), (int, float))):
            return None
        distances.append(float(stored["distance"]))
    return SensitivityEstimate(max(distances), distances, n, random_dp_gamma(n), 0.0)
