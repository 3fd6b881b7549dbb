"""The colours gwatch-nb draws with, in one place: a colour per scope (the same in the
timeline and the charts), per run of a comparison, for a warp's busy and idle time, and per
stall reason."""
from __future__ import annotations

#: Scope colours, in order of first appearance (Tableau 10 then Tableau 20's light tones):
#: distinct at a glance.
SCOPE_COLOURS = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#f1ce63", "#86bcb6", "#ff9d9a", "#d4a6c8", "#fabfd2",
    "#d7b5a6", "#79706e",
)

#: Run colours, the baseline first (Tableau 10, distinct from one another in print too).
RUN_COLOURS = ("#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7")

#: A warp's time inside an outermost scope, and outside any.
BUSY, IDLE = "#4e79a7", "#d9dde3"


def scope_colours(count: int) -> list[str]:
    """One colour per scope name; past the palette's end colours repeat."""
    return [SCOPE_COLOURS[i % len(SCOPE_COLOURS)] for i in range(count)]


def run_colour(index: int) -> str:
    """The colour of the run at this index, in charts, timelines and tables alike."""
    return RUN_COLOURS[index % len(RUN_COLOURS)]


#: A colour per stall reason CUPTI names on sm_90 (stall_reasons.reason_of), by family: waits
#: on memory in blues, on a barrier or the clock in reds, on a pipe or a dependency in greens,
#: issuing in greys, the rest in browns and purples.
STALL_REASON_COLOURS = {
    "long_scoreboard": "#2f5d8a", "lg_throttle": "#4e79a7", "drain": "#7aa6d2", "imc_miss": "#a0cbe8",
    "tex_throttle": "#c6dbef",
    "barrier": "#c0392b", "membar": "#e15759", "sleeping": "#ff9d9a",
    "math_pipe_throttle": "#2e7d32", "mio_throttle": "#59a14f", "short_scoreboard": "#8cd17d",
    "wait": "#76b7b2", "dispatch_stall": "#86bcb6", "warpgroup_arrive": "#b5e3df",
    "selected": "#79706e", "not_selected": "#bab0ac",
    "branch_resolving": "#9c755f", "no_instructions": "#b07aa1", "misc": "#d4a6c8",
}
OTHER_REASON = "#edc948"  # a reason this table does not name


def stall_reason_colours(reasons: list[str]) -> list[str]:
    return [STALL_REASON_COLOURS.get(r, OTHER_REASON) for r in reasons]
