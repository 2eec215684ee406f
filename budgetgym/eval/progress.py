"""Progress bars (rich) with counts and rate for every long run; a no-op when disabled."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from budgetgym.eval._extras import require


@contextlib.contextmanager
def progress_bar(total: int, description: str, enabled: bool = True,
                 unit: str = "ep") -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; shows ``description [bar] done/total  rate  elapsed  eta`` when enabled."""
    if not enabled:
        yield lambda n=1: None
        return
    progress = require("rich.progress", "progress bars")
    text = require("rich.text", "progress bars")

    class RateColumn(progress.ProgressColumn):
        def render(self, task) -> object:  # type: ignore[no-untyped-def]
            speed = task.finished_speed or task.speed
            return text.Text("?" if speed is None else f"{speed:.1f} {unit}/s", style="progress.data.speed")

    columns = (progress.TextColumn("{task.description}"), progress.BarColumn(), progress.MofNCompleteColumn(),
               RateColumn(), progress.TimeElapsedColumn(), progress.TextColumn("eta"), progress.TimeRemainingColumn())
    with progress.Progress(*columns, transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
