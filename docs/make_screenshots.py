"""Screenshots of the Analyses page's entropy scatter (``core.views.analysis_figures.scatter_figure``) for each task's
cached FFNN and RNN runs, written as PNG into ``docs/`` — re-make them whenever the figure changes:

    MIA_CACHE_DIR=/tmp/cache python docs/make_screenshots.py                 # every task whose runs are cached
    MIA_CACHE_DIR=/tmp/cache python docs/make_screenshots.py --task image --scale linear

The figure is the page's own (same data from ``core.analyses.analysis.entropy_scatter``, same function), written
as a self-contained HTML file and photographed by headless Chromium (``--chromium``, default
``/usr/bin/chromium``): no network, no extra Python package. Runs that are not cached are skipped
with a line saying so (train them with ``python -m core run --task T --arch A --preset P``).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.analyses import analysis  # noqa: E402  (the repository root is put on the path first)
from core.views.analysis_figures import SCALES, scatter_figure
from core.experiment.pipeline import cached_summary  # noqa: E402
from core.tasks import available_tasks, get_task  # noqa: E402

WIDTH, HEIGHT = 1400, 700


def shoot(chromium: str, html: Path, png: Path) -> None:
    """One headless Chromium screenshot of ``html`` (plotly draws on load; the virtual-time budget
    lets it finish before the picture is taken)."""
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-background-networking", "--no-first-run", f"--window-size={WIDTH},{HEIGHT}",
                    "--virtual-time-budget=8000", f"--screenshot={png}", html.as_uri()],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", choices=available_tasks(), help="default: every task")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--scale", action="append", choices=SCALES, help="default: log")
    parser.add_argument("--attack", help="default: the task's primary attack")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    chromium = shutil.which(args.chromium)
    if chromium is None:
        print(f"error: no Chromium at {args.chromium}", file=sys.stderr)
        return 2
    made = 0
    with tempfile.TemporaryDirectory() as tmp:
        for task_name in args.task or available_tasks():
            task = get_task(task_name)
            summaries = {a: cached_summary(task.make_config(a, args.preset)) for a in ("ffnn", "rnn")}
            missing = [a for a, s in summaries.items() if s is None]
            if missing:
                print(f"skipped {task_name}: {', '.join(missing)} ({args.preset}) not cached")
                continue
            scatters = {a: analysis.entropy_scatter(s) for a, s in summaries.items()}
            attack = args.attack or summaries["ffnn"]["attack"]["name"]
            for scale in args.scale or ["log"]:
                fig = scatter_figure(scatters, attack, scale)
                fig.update_layout(width=WIDTH - 20, height=HEIGHT - 20,
                                  title_text=f"{task_name} ({args.preset}) · {attack} · " + fig.layout.title.text)
                html = Path(tmp) / f"{task_name}-{scale}.html"
                html.write_text(fig.to_html(include_plotlyjs=True, full_html=True, config={"displayModeBar": False}))
                png = args.out / f"scatter_{task_name}{'' if scale == 'log' else '_' + scale}.png"
                shoot(chromium, html, png)
                print(f"wrote {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}")
                made += 1
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
