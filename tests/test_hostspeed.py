"""The machine's speed and busy time that the suite prints in its header and summary."""

from __future__ import annotations

from tests.hostspeed import busy_seconds, machine_busy, probe

# /proc/stat of a 2-CPU machine (Linux 6.x), its first lines
STAT = """cpu  6013756 7750 981596 3549359 17475 0 7609 6950 0 0
cpu0 2846172 3874 468390 1965348 2268 0 1642 3482 0 0
cpu1 3167584 3875 513205 1584010 15207 0 5966 3468 0 0
intr 1843720592 0 9 0 0 0 0 0 0 0 0 0 0
"""


def test_busy_seconds_leave_out_idle_and_iowait_and_count_steal():
    busy = 6013756 + 7750 + 981596 + 0 + 7609 + 6950  # user nice system irq softirq steal
    assert busy_seconds(STAT, 100) == busy / 100
    assert busy_seconds(STAT.replace("cpu ", "cpux "), 100) is None  # no total line: no figure


def test_the_machine_and_the_probe_give_figures_where_linux_is():
    first = machine_busy()
    if first is None:  # not Linux: the summary prints nothing
        return
    # a child that imports no torch: the header's probe already costs each run 1-2 CPU-seconds
    seconds = probe("sum(range(3_000_000))")
    assert seconds is not None and 0.01 < seconds < 60
    assert machine_busy() >= first + 0.5 * seconds  # the child's CPU, at least in part
    assert probe("raise SystemExit(1)") is None  # a child that fails gives no figure
