"""Environments of the tasks (MiniGrid floor-maps for navigation: :mod:`core.envs.minigrid`)."""
