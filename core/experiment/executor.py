"""Where independent trainings run: in this process, in a local process pool, or on Ray.

An executor runs a list of :class:`TrainingJob` and returns per job a :class:`TrainingOutput` of plain bytes
(safetensors weights, ``.npz`` Responses, JSON meta); the driver writes them into the content-addressed cache, so
a result is the same whichever executor produced it.

* ``local`` (default): one after another, in this process.
* ``ensemble``: in this process, the jobs the task can vectorise trained together (:mod:`core.training.ensemble`);
  same seeds and data order as ``local``, equal to float tolerance.
* ``processes``: a pool of ``workers`` spawned processes, each sized to its share of the usable cores.
* ``ray``: tasks on a Ray cluster (``address``) or a local Ray instance. Workers need this repository
  importable (e.g. ``ray.init(runtime_env={"working_dir": ...})``).

Seeds travel in the job, so every executor trains bit-for-bit the same model on the same hardware.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from safetensors.torch import save as save_safetensors
from torch import nn

from core.experiment.model_meta import ModelMeta
from core.experiment.roles import (
    EpochRecorder,
    TrainingJob,
    TrainingOutput,
    config_from_dict,
    role_seed,
    seed_everything,
    train_job,
)
from core.foundations.config import EXECUTORS
from core.foundations.device import default_device, usable_cores
from core.foundations.errors import ConfigError
from core.foundations.processes import outbox, raise_failures, run_pool, throttled
from core.tasks import get_task


# ---------------------------------------------------------------------------- the ensemble executor's grouping
def ensemble_groups(jobs: Sequence[TrainingJob]) -> tuple[list[list[int]], list[int]]:
    """Positions of ``jobs`` that can train together (same config, the task supports an ensemble
    for it, equal training-set sizes), and the rest (trained one by one)."""
    groups: dict[tuple, list[int]] = {}
    alone: list[int] = []
    for i, job in enumerate(jobs):
        cfg = config_from_dict(job.config)
        if get_task(cfg.task).supports_ensemble(cfg):
            groups.setdefault((cfg.config_hash, len(job.train_index)), []).append(i)
        else:
            alone.append(i)
    together = [g for g in groups.values() if len(g) > 1]
    alone += [g[0] for g in groups.values() if len(g) == 1]
    return together, sorted(alone)


def train_jobs_together(jobs: Sequence[TrainingJob]) -> list[TrainingOutput]:
    """Train ``jobs`` (one config, equal training sizes) as one ensemble; per job the same
    :class:`~core.experiment.executor.TrainingOutput` as :func:`core.experiment.roles.train_job` (``train_s``: the
    ensemble's time over its members)."""
    cfg = config_from_dict(jobs[0].config)
    task = get_task(cfg.task)
    data = task.load(cfg)
    seeds = [role_seed(cfg, job.role) for job in jobs]
    models = []
    for seed in seeds:  # each member initialised exactly as it would be alone
        seed_everything(seed)
        models.append(task.build_model(cfg, data).to(default_device()))
    recorders = []
    for job in jobs:
        measure = None
        if job.measure_utility is not None:
            measure = (np.asarray(job.measure_utility[0], np.int64), np.asarray(job.measure_utility[1], np.int64))
        recorders.append(EpochRecorder(task, cfg, data, job.role, np.asarray(job.query_index, np.int64), measure))

    def on_epoch(epoch: int, members: Sequence[nn.Module]) -> None:
        for recorder, member in zip(recorders, members):
            recorder(epoch, member)

    seconds = task.train_ensemble(cfg, models, data, [np.asarray(j.train_index, np.int64) for j in jobs], seeds,
                                  on_epoch)
    out = []
    for job, recorder, model in zip(jobs, recorders, models):
        trained = recorder.result(model.eval(), seconds / len(jobs))
        weights = save_safetensors({k: v.detach().cpu().contiguous() for k, v in trained.weights.items()})
        meta = ModelMeta(params=trained.params, per_epoch=trained.per_epoch, train_s=trained.train_s,
                         ensemble_members=len(jobs))
        out.append(TrainingOutput(job.role, meta, weights, {e: r.to_bytes() for e, r in trained.responses.items()}))
    return out


def train_job_reporting(job: TrainingJob) -> TrainingOutput:
    """:func:`train_job` in a pool worker, sending ``(role, fraction)`` to the driver's queue
    (:func:`~core.foundations.processes.throttled`: a few times a second, and the end), so the
    driver's progress bar moves while the worker trains."""
    queue = outbox()
    if queue is None:
        return train_job(job)
    return train_job(job, throttled(lambda fraction: queue.put((job.role, float(fraction))), lambda f: f >= 1.0))


#: ``on_progress(role, fraction)``: a job's training progress, in the driver
JobProgress = Callable[[str, float], None]


def _for_role(on_progress: JobProgress, role: str) -> Callable[[float], None]:
    """``on_progress`` for one job: the ``on_progress(fraction)`` that :func:`train_job` calls, reported under ``role``."""
    def report(fraction: float) -> None:
        on_progress(role, fraction)

    return report


class Executor:
    """Runs jobs; ``on_done(output)`` is called in the driver as each one finishes, and
    ``on_progress(role, fraction)`` (where the executor can) while each trains."""

    name = "local"

    def map(self, jobs: list[TrainingJob], on_done: Callable[[TrainingOutput], None],
            on_progress: JobProgress | None = None) -> None:
        for job in jobs:
            on_done(train_job(job, _for_role(on_progress, job.role) if on_progress else None))

    def run_many(self, function: Callable[[Any], Any], items: list[Any], on_done: Callable[[Any], None]) -> None:
        """``on_done(function(item))`` for every item, in any order: for independent work other than
        the pipeline's trainings (e.g. SensitivitySampler pairs). ``function`` must be a module-level
        function and items plain data (they travel to worker processes); results return as plain data."""
        for item in items:
            on_done(function(item))

    def close(self) -> None:
        pass


class EnsembleExecutor(Executor):
    """This process; jobs of one config trained as one vectorised ensemble where the task allows."""

    name = "ensemble"

    def map(self, jobs: list[TrainingJob], on_done: Callable[[TrainingOutput], None],
            on_progress: JobProgress | None = None) -> None:
        """(Progress here moves model by model: an ensemble step trains every member.)"""

        together, alone = ensemble_groups(jobs)
        for group in together:
            for output in train_jobs_together([jobs[i] for i in group]):
                on_done(output)
        for i in alone:
            on_done(train_job(jobs[i]))


class ProcessExecutor(Executor):
    """A local pool of spawned worker processes (:func:`core.foundations.processes.run_pool`).

    Jobs that finish are delivered as they finish; a job that raises, or a worker that dies, does
    not lose them: the pool is drained, then one :class:`~core.foundations.errors.WorkerFailedError` names
    what failed. (A dead worker breaks the whole pool, so every job still pending fails with it.)
    """

    name = "processes"

    def __init__(self, workers: int | None = None):

        cores = usable_cores()
        self.workers = max(1, min(workers or cores, cores))
        self.threads = max(1, cores // self.workers)

    def map(self, jobs: list[TrainingJob], on_done: Callable[[TrainingOutput], None],
            on_progress: JobProgress | None = None) -> None:
        self._run(train_job_reporting, jobs, [job.role for job in jobs], on_done, on_progress)

    def run_many(self, function: Callable[[Any], Any], items: list[Any], on_done: Callable[[Any], None]) -> None:
        self._run(function, items, [f"item {k}" for k in range(len(items))], on_done)

    def _run(self, function: Callable[[Any], Any], items: list[Any], names: list[str],
             on_done: Callable[[Any], None], on_progress: JobProgress | None = None) -> None:
        on_message = (lambda message: on_progress(*message)) if on_progress is not None else None
        run_pool(function, items, on_done, workers=self.workers, threads=self.threads, names=names,
                 on_message=on_message, where=self.name)


class RayExecutor(Executor):
    """Jobs as Ray tasks (one CPU each by default); a local Ray instance when no address is given.
    Failures are reported as :class:`ProcessExecutor`'s are, after the other tasks finished."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, cpus_per_job: float = 1.0):
        import ray

        if not ray.is_initialized():
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "runtime_env": {"env_vars": {"PYTHONPATH": root}}}
            if address:
                kwargs["address"] = address
            else:
                kwargs["num_cpus"] = num_cpus
            try:
                ray.init(**kwargs)
            except (ValueError, ConnectionError, TimeoutError) as exc:
                # no ray[client] extra or a malformed address (ValueError), an unreachable one: one line
                where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
                reason = " ".join(str(exc).split())
                if "ray[client]" in reason:
                    reason = "Ray's client extra is not installed (pip install 'ray[client]')"
                raise ConfigError(f"cannot start the ray executor on {where}: {reason}") from None
        self._ray = ray
        self._cpus_per_job = cpus_per_job
        self._remote = ray.remote(num_cpus=cpus_per_job)(train_job)

    def map(self, jobs: list[TrainingJob], on_done: Callable[[TrainingOutput], None],
            on_progress: JobProgress | None = None) -> None:
        """(Progress moves model by model on Ray: tasks send no fractions back.)"""
        self._drain({self._remote.remote(job): job.role for job in jobs}, on_done)

    def run_many(self, function: Callable[[Any], Any], items: list[Any], on_done: Callable[[Any], None]) -> None:
        remote = self._ray.remote(num_cpus=self._cpus_per_job)(function)
        self._drain({remote.remote(item): f"item {k}" for k, item in enumerate(items)}, on_done)

    def _drain(self, names: dict, on_done: Callable[[Any], None]) -> None:
        pending, failures, finished = list(names), [], 0
        while pending:
            done, pending = self._ray.wait(pending, num_returns=1)
            try:
                result = self._ray.get(done[0])
            except Exception as exc:  # noqa: BLE001 - RayTaskError, WorkerCrashedError, …
                failures.append((names[done[0]], exc))
                continue
            on_done(result)
            finished += 1
        raise_failures(self.name, failures, finished, len(names))


def make_executor(name: str = "local", workers: int | None = None, address: str | None = None) -> Executor:
    """The executor called ``name`` (``local``, ``ensemble``, ``processes``, ``ray``)."""
    if name == "local":
        return Executor()
    if name == "ensemble":
        return EnsembleExecutor()
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "ray":
        try:
            return RayExecutor(address, num_cpus=workers)
        except ImportError:
            raise ConfigError("the ray executor needs the ray package (pip install -r requirements.txt)") from None
    raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {name!r}")


def as_tuple(index: Iterable[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in index)
