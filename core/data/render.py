"""Drawing a navigation query episode as a PNG (the summary's example maps)."""
from __future__ import annotations

import base64
import io

import numpy as np

from core.data.minigrid import MapEnv, Rollout


def render_path(env_id: str, run: Rollout, tile_size: int = 24) -> str:
    """PNG (base64) of the map at the end of ``run`` with the cells the agent visited tinted
    blue (darker = visited later), cropped to the rooms."""
    from PIL import Image

    env = MapEnv(env_id, render_mode="rgb_array")
    env.env.tile_size = tile_size
    env.env.highlight = False
    env.reset(run.seed)
    for a in run.actions:
        _, _, term, trunc = env.step(a)
        if term or trunc:
            break
    img = np.asarray(env.env.get_frame(highlight=False, tile_size=tile_size), dtype=np.float32)
    n = max(len(run.path), 1)
    for k, (x, y) in enumerate(run.path):
        shade = 0.35 + 0.4 * k / n
        tile = img[y * tile_size : (y + 1) * tile_size, x * tile_size : (x + 1) * tile_size]
        tile[...] = (1 - shade) * tile + shade * np.array([60.0, 120.0, 255.0])
    code = env.env.grid.encode()
    used = np.argwhere(code[..., 0] != 1)  # cells that are not empty floor outside the rooms
    if len(used):
        (x0, y0), (x1, y1) = used.min(0), used.max(0) + 1
        img = img[y0 * tile_size : y1 * tile_size, x0 * tile_size : x1 * tile_size]
    buf = io.BytesIO()
    Image.fromarray(img.clip(0, 255).astype(np.uint8)).save(buf, format="PNG", optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")
