"""The navigation maps: one example map drawn cell by cell with each architecture's query path on it
(the Train & attack page's examples and the run report)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from core.data.planner import DOOR, EMPTY, FLOOR, GOAL, LAVA, WALL  # MiniGrid's object indices: one source
from core.foundations.names import ARCH_NAMES
from core.tasks.navigation import MapView
from core.views.style import ARCH_COLOURS, LEGEND_ROW_PX, layout, legend_rows

#: MiniGrid object index -> (name, colour) of the cells drawn
CELL_STYLE = {EMPTY: ("floor", "#f5f5f0"), FLOOR: ("floor", "#f5f5f0"), WALL: ("wall", "#4d4d4d"),
              DOOR: ("door", "#c8963e"), GOAL: ("goal", "#2ca02c"), LAVA: ("lava", "#ff7f0e")}
#: MiniGrid's agent direction -> marker pointing that way (0 = +x, 1 = +y (down), 2 = −x, 3 = −y)
DIR_SYMBOL = {0: "triangle-right", 1: "triangle-down", 2: "triangle-left", 3: "triangle-up"}


def _dedup(path: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for p in path:
        if not out or out[-1] != p:
            out.append(p)
    return out


def navigation_map(views: Mapping[str, Sequence[MapView]], role: str) -> go.Figure | None:
    """One example map (``role`` = "member" or "non-member") drawn cell by cell, with the query path
    of each architecture's victim on it (when the architectures' maps differ, the first one's map
    is drawn and only agents on that map are shown), the start (triangle: facing direction),
    the goal and where each agent stopped; ``views`` maps architecture -> its maps (:mod:`core.jobs.mapview`)."""
    found = {arch: next((m for m in v if m.role == role), None) for arch, v in views.items()}
    maps = {a: m for a, m in found.items() if m is not None}
    if not maps:
        return None
    base = next(iter(maps.values()))
    same = {a: m for a, m in maps.items() if m.seed == base.seed and m.cells == base.cells}
    cells = np.asarray(base.cells)
    kinds = sorted({int(v) for v in np.unique(cells)} & set(CELL_STYLE))
    order = {k: i for i, k in enumerate(kinds)}
    z = np.vectorize(lambda v: order.get(int(v), 0))(cells)
    colours = [CELL_STYLE[k][1] for k in kinds]
    n = max(len(kinds), 1)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    fig = go.Figure()
    fig.add_heatmap(z=z, colorscale=scale, zmin=0, zmax=n, showscale=False, xgap=1, ygap=1, hoverinfo="skip",
                    name="map", showlegend=False)
    for name, colour in dict(CELL_STYLE[k] for k in kinds).items():  # legend keys of the cell kinds
        fig.add_scatter(x=[None], y=[None], mode="markers", name=name,
                        marker=dict(symbol="square", size=13, color=colour, line=dict(width=1, color="#999")))
    offsets = {"ffnn": -0.14, "rnn": 0.14}
    for arch, m in same.items():
        arch_colour = ARCH_COLOURS.get(arch)
        d = offsets.get(arch, 0.0) if len(same) > 1 else 0.0
        path = _dedup(m.path)
        outcome = "goal reached" if m.reached_goal else "goal not reached"
        fig.add_scatter(x=[p[0] + d for p in path], y=[p[1] + d for p in path], mode="lines+markers",
                        line=dict(color=arch_colour, width=3), marker=dict(size=6, color=arch_colour),
                        name=f"{ARCH_NAMES.get(arch, arch)} path: {m.steps} steps, {outcome}",
                        hovertemplate="(%{x:.0f}, %{y:.0f})<extra>" + ARCH_NAMES.get(arch, arch) + "</extra>")
        end = path[-1]
        fig.add_scatter(x=[end[0] + d], y=[end[1] + d], mode="markers", showlegend=False, hoverinfo="skip",
                        marker=dict(symbol="x", size=13, color=arch_colour, line=dict(width=1, color="white")))
    sx, sy = base.start
    fig.add_scatter(x=[sx], y=[sy], mode="markers", name="start (facing)",
                    marker=dict(symbol=DIR_SYMBOL.get(base.start_dir, "triangle-up"), size=18, color="black"))
    if base.goal:
        gx, gy = base.goal
        fig.add_scatter(x=[gx], y=[gy], mode="markers", name="goal", showlegend=False,
                        marker=dict(symbol="star", size=18, color="white", line=dict(width=1.5, color="#145214")))
    fig.add_scatter(x=[None], y=[None], mode="markers", name="where the agent stopped",
                    marker=dict(symbol="x", size=12, color="grey"))
    h, w = cells.shape
    cell_px = max(22, min(44, int(420 / max(h, w))))
    fig.update_xaxes(range=[-0.5, w - 0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="", constrain="domain")
    fig.update_yaxes(range=[h - 0.5, -0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="", scaleanchor="x",
                     constrain="domain")
    title = f"{'Member' if role == 'member' else 'Unseen'} map (seed {base.seed})"
    fig = layout(fig, title, "", "", height=90 + cell_px * h)
    fig.update_layout(plot_bgcolor="white", margin=dict(l=10, r=10, t=50, b=30 + legend_rows(fig) * LEGEND_ROW_PX))
    return fig
