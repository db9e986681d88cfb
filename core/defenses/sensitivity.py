"""SensitivitySampler (paper 000, Algorithm 2; Rubinstein & Aldà 2017): an empirical estimate of how far one
training record can move the trained weights.

Repeat n times: draw N + 1 records from the victim's half; D₁ = {d₁…d_N}, D₂ = D₁ with d_N replaced by d_{N+1};
train θ on D₁ and θ′ on D₂ **with the same initialisation and data order** (else ‖θ − θ′‖ measures training's
randomness); Sᵢ = ‖θ − θ′‖₂ over the trainable parameters. S = maxᵢ Sᵢ; the GPM calibrated on S is random-DP
with confidence γ(n) (eq. 12). N = n_train, and every pair is cached as it finishes, so a run resumes.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from core.defenses.gpm import random_dp_gamma
from core.experiment.cache import ArtifactCache
from core.experiment.roles import config_from_dict, train_model
from core.foundations.config import ExperimentConfig
from core.tasks import get_task


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


def pair_distance(cfg: ExperimentConfig, data, i: int) -> float:
    """Pair ``i`` of Algorithm 2 for ``cfg``: two neighbouring training sets drawn from the
    victim's pool (seeded by i), two models trained on them with the same seed, ‖θ − θ′‖₂."""
    task = get_task(cfg.task)
    rng = np.random.default_rng([cfg.seed, 0x5E45, i])
    d1, d2 = neighbouring_sets(np.asarray(data.victim_pool), cfg.n_train, rng)
    seed = cfg.seed * 7919 + 7 * 104729 + i  # the same for both models of the pair
    return parameter_distance(train_model(task, cfg, data, d1, seed), train_model(task, cfg, data, d2, seed))


def pair_job(item: tuple[dict, int]) -> tuple[int, float]:
    """One pair on an executor's worker: ``(config as a dict, i)`` → ``(i, distance)``."""

    config, i = item
    cfg = config_from_dict(config)
    return i, pair_distance(cfg, get_task(cfg.task).load(cfg), i)


def sample_sensitivity(
    cfg: ExperimentConfig,
    n: int,
    cache: ArtifactCache | None = None,
    on_pair: Callable[[int, int], None] | None = None,
    executor=None,
) -> SensitivityEstimate:
    """Algorithm 2 with ``n`` pairs for the model of ``cfg``; each pair cached under the training hash.

    ``on_pair(done, n)`` reports progress after every pair. The pairs are independent: with an
    ``executor`` (:mod:`core.experiment.executor`: processes, Ray) the missing ones train in parallel there and
    this process caches their distances (the same numbers as in this process, same seeds).
    """
    cache = cache or ArtifactCache()
    start = time.perf_counter()

    def key(i: int) -> str:
        return cache.key("sensitivity", cfg.training_hash, "pair", i)

    def stored(i: int) -> float | None:
        value = cache.get_json(key(i))
        return float(value["distance"]) if isinstance(value, dict) and isinstance(value.get("distance"), (int, float)) else None

    if executor is not None and executor.name not in ("local", "ensemble") and n >= 1:
        missing = [i for i in range(n) if stored(i) is None]
        done = [n - len(missing)]

        def keep(result: tuple[int, float]) -> None:
            cache.put_json(key(result[0]), {"distance": float(result[1])})
            done[0] += 1
            if on_pair:
                on_pair(done[0], n)

        executor.run_many(pair_job, [(cfg.to_dict(), i) for i in missing], keep)
    data = get_task(cfg.task).load(cfg)

    def distance(i: int) -> float:
        d = stored(i)
        if d is None:
            d = pair_distance(cfg, data, i)
            cache.put_json(key(i), {"distance": d})
        return d

    estimate = sensitivity_sampler(n, distance, on_pair)
    estimate.seconds = time.perf_counter() - start
    return estimate


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
