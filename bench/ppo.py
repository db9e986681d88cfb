"""PPO throughput: our loop (core.training.ppo.train_ppo) vs torch-ac's PPOAlgo at equal settings.

Both train the same agents (core.models.navigation, same widths) on the same MiniGrid
environment with rl-starter-files' defaults: 16 environments × 128 frames per update, 4 epochs,
mini-batches of 256 frames, truncated BPTT over 16 frames for the LSTM agent, one torch thread.
torch-ac steps its environments in 15 worker processes (its ParallelEnv) and builds MiniGrid's
observations with MiniGrid's own code; ours steps them in-process with the numpy observation of
core.data.minigrid.MapEnv.

    .venv/bin/python bench/ppo.py [--env MiniGrid-MultiRoom-N2-S4-v0] [--updates 5]

torch-ac is optional (bench/requirements.txt pins it); without it only our loop is measured.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.models.navigation import build_agent, count_params  # noqa: E402
from core.training.ppo import PPOSettings, train_ppo  # noqa: E402
from core.data.minigrid import MapVecEnv  # noqa: E402


def bench_ours(arch: str, env_id: str, updates: int, settings: PPOSettings) -> float:
    """Frames per second of train_ppo (warm-up update excluded)."""
    torch.manual_seed(0)
    model = build_agent(arch)
    envs = MapVecEnv(env_id, settings.n_envs, np.arange(1000), order_seed=0)
    train_ppo(model, envs, settings, 1, seed=0)  # warm-up: allocations, map cache
    t = time.perf_counter()
    train_ppo(model, envs, settings, updates, seed=1)
    return updates * settings.frames_per_update / (time.perf_counter() - t)


def bench_torch_ac(arch: str, env_id: str, updates: int, settings: PPOSettings) -> float | None:
    """Frames per second of torch_ac.PPOAlgo with the same agent and settings (None: not installed)."""
    try:
        import torch_ac
    except ImportError:
        return None
    import gymnasium as gym
    import minigrid  # noqa: F401

    class Wrapped(torch.nn.Module, torch_ac.RecurrentACModel if arch == "rnn" else torch_ac.ACModel):
        """Our agent behind torch-ac's model interface (a Categorical distribution, value, memory)."""

        def __init__(self, agent: torch.nn.Module):
            super().__init__()
            self.agent = agent
            self.recurrent = arch == "rnn"

        @property
        def memory_size(self) -> int:
            return self.agent.memory_size

        def forward(self, obs, memory=None):
            logits, value, new_memory = self.agent(obs.image, memory)
            dist = torch.distributions.Categorical(logits=logits)
            return (dist, value, new_memory) if self.recurrent else (dist, value)

    def preprocess(obss, device=None):
        images = torch.from_numpy(np.stack([o["image"] for o in obss]))
        return torch_ac.DictList({"image": images})

    torch.manual_seed(0)
    envs = []
    for i in range(settings.n_envs):
        env = gym.make(env_id)
        env.reset(seed=10_000 + i)
        envs.append(env)
    model = Wrapped(build_agent(arch))
    algo = torch_ac.PPOAlgo(
        envs, model, torch.device("cpu"), settings.frames_per_env, settings.gamma, settings.lr, settings.gae_lambda,
        settings.entropy_coef, settings.value_coef, settings.max_grad_norm,
        settings.recurrence if arch == "rnn" else 1, settings.adam_eps, settings.clip_eps, settings.ppo_epochs,
        settings.batch_size, preprocess,
    )
    exps, _ = algo.collect_experiences()  # warm-up
    algo.update_parameters(exps)
    t = time.perf_counter()
    for _ in range(updates):
        exps, _ = algo.collect_experiences()
        algo.update_parameters(exps)
    fps = updates * settings.frames_per_update / (time.perf_counter() - t)
    for local in algo.env.locals:  # stop torch-ac's worker processes
        local.close()
    return fps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="MiniGrid-MultiRoom-N2-S4-v0")
    parser.add_argument("--updates", type=int, default=5, help="timed PPO updates of 2,048 frames each")
    parser.add_argument("--archs", default="ffnn,rnn")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = PPOSettings()
    rows = []
    for arch in args.archs.split(","):
        ours = bench_ours(arch, args.env, args.updates, settings)
        theirs = bench_torch_ac(arch, args.env, args.updates, settings)
        rows.append((arch, count_params(build_agent(arch)), ours, theirs))
    print(f"PPO throughput on {args.env}: {args.updates} updates × {settings.frames_per_update} frames, "
          f"{settings.n_envs} envs, recurrence {settings.recurrence} (rnn), 1 torch thread")
    print(f"{'arch':<6} {'params':>8} {'ours f/s':>10} {'torch-ac f/s':>13} {'ratio':>7}")
    for arch, params, ours, theirs in rows:
        t = f"{theirs:13.0f}" if theirs else f"{'(absent)':>13}"
        r = f"{ours / theirs:7.2f}" if theirs else f"{'-':>7}"
        print(f"{arch:<6} {params:>8,} {ours:10.0f} {t} {r}")
    if any(theirs is None for *_, theirs in rows):
        print("torch-ac not installed: pip install -r bench/requirements.txt to compare")


if __name__ == "__main__":
    main()
