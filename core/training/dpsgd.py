"""DP-SGD through Opacus: the privacy wrapper :mod:`core.training` puts around a model and its
optimizer, and the accounting that turns a run's recorded steps into (ε, δ).

DP-SGD (paper 000, eq. 7–8; Abadi et al. 2016). Each step draws a batch X by Poisson sampling
(every one of the N samples independently with probability q = ``sample_rate``), computes every
sample's own gradient g_x, clips it and adds Gaussian noise to the sum:

    clip(g, C) = g · min(1, C / ‖g‖₂),
    θ ← θ − η · (1/B̄) · ( Σ_{x∈X} clip(g_x, C) + N(0, σ²C²·I) ),     B̄ = ⌊q·N⌋ (Opacus),

(for Adam, the noisy average gradient is what Adam's moments see). ``σ`` is the noise multiplier,
``C`` the clip norm. One sample changes the noisy sum by at most C, so each step is a subsampled
Gaussian mechanism; T steps compose, and an accountant bounds the whole run's (ε, δ):

* RDP (Rényi DP, Mironov 2017; Mironov, Talwar & Zhang 2019) — a valid upper bound;
* PRV (privacy random variables, Gopi, Lee & Wutschitz 2021) — a tighter numerical bound
  (Opacus returns the upper end of its error interval);
* GDP (Gaussian DP via the central limit theorem, Dong, Roth & Su 2019) — an *approximation*
  valid for many steps at small q, shown for comparison only.

The wrapper uses Opacus' ``PrivacyEngine.make_private``: per-sample gradients from Opacus'
hooks (so the model must pass ``ModuleValidator``: the tasks build DP-compatible layers when
``cfg.dp`` is on), a ``DPOptimizer`` doing the clipping and noise, and a ``DPDataLoader`` doing
Poisson sampling with our seeded generator. What is recorded — σ, C, q, steps, δ and the
accountant's history ``[(σ, q, steps)]`` — is enough for anyone to recompute ε with Opacus.

:mod:`core.training` sits on top of this module (it imports nothing of ``core`` but the errors), and
Opacus is imported inside the functions that need it, so non-private runs never load it.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

import torch
from torch import nn

from core.foundations.errors import ConfigError

if TYPE_CHECKING:  # Opacus is imported where it is used (non-private runs never load it)
    from opacus.grad_sample import GradSampleModule


@dataclass(frozen=True)
class PrivacySettings:
    """What a config asks of DP-SGD (:meth:`from_config`; None while ``dp`` is off).

    Attributes:
        max_grad_norm: C, the per-sample clip norm (> 0).
        delta: δ of the reported (ε, δ), in (0, 1).
        noise_multiplier: σ (≥ 0), or None when ``target_epsilon`` sets it.
        target_epsilon: ε the run must reach at δ after all its steps (σ then found by Opacus'
            ``get_noise_multiplier``), or None.
        accountant: the accountant calibrating σ to a target ε (``rdp`` or ``prv``).
    """

    max_grad_norm: float
    delta: float = 1e-4
    noise_multiplier: float | None = 1.0
    target_epsilon: float | None = None
    accountant: str = "rdp"

    @classmethod
    def from_config(cls, cfg: Any) -> "PrivacySettings | None":
        """The DP-SGD settings of an :class:`~core.foundations.config.ExperimentConfig`, None if ``dp`` is off."""
        if cfg.dp == "off":
            return None
        return cls(max_grad_norm=cfg.dp_max_grad_norm, delta=cfg.dp_delta,
                   noise_multiplier=cfg.dp_noise_multiplier if cfg.dp == "sigma" else None,
                   target_epsilon=cfg.dp_epsilon if cfg.dp == "epsilon" else None, accountant=cfg.dp_accountant)


class EpsilonOutOfReachError(ConfigError):
    """No σ ≤ 10⁶ reaches the target ε in the run's steps: known once its sampling plan is (in
    training), so a sweep keeps the points it computed and names the value it could not."""


#: accountants reported for every private run (GDP: a CLT approximation, shown for comparison)
REPORTED_ACCOUNTANTS = ("rdp", "prv", "gdp")


def resolve_noise(settings: PrivacySettings, sample_rate: float, steps: int) -> float:
    """σ of a run of ``steps`` steps at ``sample_rate``: the given one, or the σ Opacus'
    ``get_noise_multiplier`` finds for the target ε (its binary search stops within 0.01 of ε,
    on the side of more noise)."""
    if settings.target_epsilon is None:
        if settings.noise_multiplier is None:  # from_config sets one of the two; a hand-built setting may not
            raise ConfigError("DP-SGD needs a noise multiplier σ or a target ε; the privacy settings give neither")
        return float(settings.noise_multiplier)
    try:
        return noise_for_epsilon(float(settings.target_epsilon), float(settings.delta), float(sample_rate), int(steps),
                                 settings.accountant)
    except ValueError as exc:  # "The privacy budget is too low."
        raise EpsilonOutOfReachError(f"target ε = {settings.target_epsilon:g} at δ = {settings.delta:g} is out of reach in {steps} "
                          f"steps at q = {sample_rate:.4g} (no σ ≤ 10⁶ gets there: {exc}); raise dp_epsilon") from None


@functools.lru_cache(maxsize=256)
def noise_for_epsilon(epsilon: float, delta: float, sample_rate: float, steps: int, accountant: str = "rdp") -> float:
    """Opacus' ``get_noise_multiplier`` (memoised: victims and shadows share their sampling plan).

    Raises:
        ValueError: no σ ≤ 10⁶ reaches ``epsilon`` (Opacus' message).
    """
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RDP's "optimal order is the largest alpha" while the search probes tiny σ
        return float(get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=sample_rate,
                                          steps=steps, accountant=accountant))


@dataclass
class PrivacyRecord:
    """What a private training run did, enough to recompute its ε with any accountant.

    Attributes:
        noise_multiplier: σ used at every step.
        max_grad_norm: C.
        sample_rate: q, each sample's probability to be in a batch (Poisson sampling).
        steps: noisy steps taken (including steps on empty batches: they add noise too).
        history: the accountant's history ``[[σ, q, steps], ...]``.
        n_samples: N, the samples one pass draws from.
        expected_batch_size: B̄ = q·N as Opacus divides by it (rounded down).
        unit: what one *sample* is (what the guarantee protects), in words.
        accountant: the accountant that calibrated σ (or that the engine kept).
        target_epsilon: the target ε when σ was calibrated to one, else None.
    """

    noise_multiplier: float
    max_grad_norm: float
    sample_rate: float
    steps: int
    history: list[list[float]]
    n_samples: int
    expected_batch_size: int
    unit: str
    accountant: str = "rdp"
    target_epsilon: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PrivacyRecord":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def epsilon(history: list, delta: float, accountant: str = "rdp") -> float:
    """ε at ``delta`` of the steps in ``history`` ([(σ, q, steps)]) by Opacus' ``accountant``
    (``rdp``, ``prv`` or ``gdp``); ∞ when some step had σ = 0 (no noise, no privacy)."""
    from opacus.accountants import create_accountant

    if not history:
        return 0.0
    if any(float(sigma) <= 0 for sigma, _, _ in history):
        return math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GDP's "experimental, may underestimate": the report says so
        acc = create_accountant(mechanism=accountant)
        acc.history = [(float(s), float(q), int(n)) for s, q, n in history]
        return float(acc.get_epsilon(delta=delta))


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def report(rec: PrivacyRecord, delta: float) -> dict[str, Any]:
    """The ``dpsgd`` block of a result: σ, C, q, steps, δ, the accountant and ε by RDP, PRV and
    GDP (None where infinite or where an accountant fails at these values, with the reason)."""
    epsilons: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for name in REPORTED_ACCOUNTANTS:
        try:
            eps = epsilon(rec.history, delta, name)
        except (ValueError, RuntimeError, OverflowError, ZeroDivisionError) as exc:  # e.g. PRV's domain
            eps, notes[name] = None, " ".join(str(exc).split())[:200] or type(exc).__name__
        if eps is not None and not math.isfinite(eps):
            notes[name] = "σ = 0: clipping without noise gives no privacy (ε = ∞)"
        epsilons[name] = _finite_or_none(eps)
    if epsilons.get("gdp") is not None:
        notes["gdp"] = "Gaussian DP via the central limit theorem: an approximation that can underestimate ε"
    return {
        "noise_multiplier": rec.noise_multiplier, "max_grad_norm": rec.max_grad_norm, "sample_rate": rec.sample_rate,
        "steps": rec.steps, "delta": delta, "accountant": rec.accountant, "target_epsilon": rec.target_epsilon,
        "epsilon": epsilons.get(rec.accountant), "epsilons": epsilons, "notes": notes, "history": rec.history,
        "n_samples": rec.n_samples, "expected_batch_size": rec.expected_batch_size, "unit": rec.unit,
        "poisson_sampling": True,
    }


# ---------------------------------------------------------------------------- the wrapper
@dataclass
class PrivateTraining:
    """A model, optimizer and Poisson batch sampler made private by Opacus (:func:`make_private`).

    Iterate :meth:`batches` once per pass; per batch :meth:`zero_grad`, :meth:`backward` of the
    mean loss and :meth:`step` (which also takes the noise-only step of an empty batch). :meth:`close`
    when training ends strips Opacus' hooks and per-sample buffers and leaves the original module,
    whose parameters are the trained ones and whose ``state_dict`` has no wrapper prefix.
    """

    module: GradSampleModule  # make_private's grad_sample_mode="hooks"
    optimizer: Any
    loader: Any
    engine: Any
    model: nn.Module
    settings: PrivacySettings
    noise_multiplier: float
    sample_rate: float
    n_samples: int
    unit: str
    closed: bool = field(default=False)

    @property
    def steps_per_pass(self) -> int:
        return len(self.loader)

    def batches(self) -> Iterator[torch.Tensor]:
        """One pass of Poisson-sampled batches of sample indices (some may be empty)."""
        for (index,) in self.loader:
            yield index.long()

    def backward(self, loss: torch.Tensor) -> None:
        """``loss.backward()``, with Opacus' hooks computing every sample's gradient."""
        with warnings.catch_warnings():
            # torch notes that a full backward hook fires on a first layer whose input needs no gradient
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            loss.backward()

    def step(self, empty: bool = False) -> None:
        """Clip every per-sample gradient to C, add N(0, σ²C²I), divide by B̄ and step.

        ``empty``: the batch drew no sample — the step still adds noise (and counts), as DP-SGD
        with Poisson sampling requires: skipping it would reveal that the batch was empty.
        """
        if empty:
            for p in self.optimizer.params:
                p.grad_sample = torch.zeros((0,) + tuple(p.shape), dtype=p.dtype, device=p.device)
        self.optimizer.step()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    @property
    def steps(self) -> int:
        return int(sum(n for _, _, n in self.engine.accountant.history))

    def record(self) -> PrivacyRecord:
        """σ, C, q, steps and the accountant's history of the steps taken so far."""
        history = [[float(s), float(q), int(n)] for s, q, n in self.engine.accountant.history]
        return PrivacyRecord(
            noise_multiplier=self.noise_multiplier, max_grad_norm=float(self.settings.max_grad_norm),
            sample_rate=self.sample_rate, steps=self.steps, history=history, n_samples=self.n_samples,
            expected_batch_size=int(self.optimizer.expected_batch_size), unit=self.unit,
            accountant=self.settings.accountant, target_epsilon=self.settings.target_epsilon)

    def close(self) -> nn.Module:
        """Remove Opacus' hooks and buffers; return the original (trained) module."""
        if not self.closed:
            self.module.to_standard_module()
            for p in self.model.parameters():
                for attr in ("grad_sample", "summed_grad"):
                    if hasattr(p, attr):
                        delattr(p, attr)
            self.closed = True
        return self.model


def make_private(model: nn.Module, optimizer: torch.optim.Optimizer, n_samples: int, batch_size: int, passes: int,
                 settings: PrivacySettings, generator: torch.Generator, noise_seed: int,
                 unit: str = "one training record") -> PrivateTraining:
    """Wrap ``model`` and ``optimizer`` for DP-SGD over ``n_samples`` samples (indices 0..N−1).

    Opacus' Poisson sampler draws each pass's batches with ``generator``: q = 1/⌈N/B⌉ (its
    expected batch is ≈ ``batch_size``), ⌈N/B⌉ steps per pass. σ is the config's, or found for
    the target ε over ``passes`` · ⌈N/B⌉ steps. The noise is drawn from a generator seeded with
    ``noise_seed`` (reproducible runs; Opacus' ``secure_mode`` is not used).

    Raises:
        ConfigError: the target ε is out of reach.
        ConfigError: the model has a layer Opacus cannot compute per-sample gradients for (the
            built-in tasks build compatible layers under DP; a plugin's model may not).
    """
    from opacus import PrivacyEngine
    from opacus.validators.errors import UnsupportedModuleError
    from torch.utils.data import DataLoader, TensorDataset

    if n_samples < 1:
        raise ValueError("DP-SGD needs at least one sample")
    model.train()  # Opacus validates (and hooks) a model in training mode
    index_loader = DataLoader(TensorDataset(torch.arange(n_samples)), batch_size=min(batch_size, n_samples),
                              generator=generator)
    steps_per_pass = len(index_loader)
    sample_rate = 1.0 / steps_per_pass
    sigma = resolve_noise(settings, sample_rate, passes * steps_per_pass)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = PrivacyEngine(accountant=settings.accountant)  # keeps the history; ε comes from report()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*non-full backward hook.*")
        try:
            module, dp_optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=index_loader, noise_multiplier=sigma,
                max_grad_norm=float(settings.max_grad_norm), poisson_sampling=True,
                noise_generator=torch.Generator(device=next(model.parameters()).device).manual_seed(int(noise_seed)),
                loss_reduction="mean", batch_first=True, grad_sample_mode="hooks")
        except UnsupportedModuleError as exc:  # a plugin's own model: the user's to fix, in one line
            raise ConfigError(f"DP-SGD cannot train this model: {' '.join(str(exc).split())} "
                              "(Opacus' per-sample gradients need its layers, e.g. opacus.layers.DPGRU for "
                              "nn.GRU)") from None
    return PrivateTraining(module, dp_optimizer, loader, engine, model, settings, float(sigma), float(sample_rate),
                           int(n_samples), unit)


def per_sample_norms(optimizer: Any) -> torch.Tensor:
    """‖g_x‖₂ of every sample's gradient in the current batch, over all parameters, as the
    ``DPOptimizer`` sees them before clipping (call between ``backward`` and ``step``)."""
    norms = [g.reshape(len(g), -1).norm(2, dim=1) for g in optimizer.grad_samples]
    return torch.stack(norms, 1).norm(2, dim=1)

