"""Progress bars (rich) with counts and rate for every long run; a no-op when disabled.

The bar fits an 80-column terminal: a description of at most 24 characters, a 16-column bar, the
count, the rate and the time left (about 76 columns with 4-digit counts).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from budgetgym.core.extras import require

DESCRIPTION_WIDTH = 24
BAR_WIDTH = 16


def short(description: str, width: int = DESCRIPTION_WIDTH) -> str:
    """``description`` cut to ``width`` characters, with an ellipsis where it was cut."""
    return description if len(description) <= width else description[:width - 1] + "…"


@contextlib.contextmanager
def progress_bar(total: int, description: str, enabled: bool = True, unit: str = "ep",
                 console: Any = None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; shows ``description [bar] done/total  rate  eta`` when enabled."""
    if not enabled:
        yield lambda n=1: None
        return
    progress = require("rich.progress", "progress bars")
    text = require("rich.text", "progress bars")

    class RateColumn(progress.ProgressColumn):
        def render(self, task) -> object:  # type: ignore[no-untyped-def]
            speed = task.finished_speed or task.speed
            return text.Text("?" if speed is None else f"{speed:.1f} {unit}/s", style="progress.data.speed")

    columns = (progress.TextColumn("{task.description}"), progress.BarColumn(bar_width=BAR_WIDTH),
               progress.MofNCompleteColumn(), RateColumn(), progress.TextColumn("eta"),
               progress.TimeRemainingColumn())
    with progress.Progress(*columns, transient=False, console=console) as bar:
        task = bar.add_task(short(description), total=total)
        yield lambda n=1: bar.advance(task, n)
