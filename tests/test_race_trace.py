"""bench/race_trace.py: from a profiler trace, each step's race between the plan's long
kernel and the training kernels beside it, lost where the next training kernel waited and
ran many times its median."""

import json
import lzma

import pytest

from bench.kernel_timeline import kernels
from bench.race_trace import main, races


def event(name: str, stream: int, ts: float, dur: float) -> dict:
    return {"cat": "kernel", "name": name, "ts": ts, "dur": dur,
            "args": {"stream": stream, "grid": [1, 1, 1]}}


def trace(tmp_path, lost_steps: set[int], steps: int = 8):
    """Steps of three training kernels (a, b, c) on stream 7 with a 5 us gap before each
    and 100 us of host time between steps; the plan's kernel on stream 9 starts in each
    step 2 us after `a` ends (in the gap: `b` waits and runs 20x) where the step is in
    `lost_steps`, else 5 us before `a` ends (`b` keeps its time)."""
    events, t = [], 0.0
    for s in range(steps):
        a0 = t
        events.append(event("a", 7, a0, 50))
        if s in lost_steps:
            events.append(event("plan", 9, a0 + 52, 400))
            events.append(event("b", 7, a0 + 140, 600))
            t = a0 + 740
        else:
            events.append(event("plan", 9, a0 + 45, 500))
            events.append(event("b", 7, a0 + 55, 30))
            t = a0 + 85
        events.append(event("c", 7, t + 5, 10))
        t += 115
    path = tmp_path / "corun.trace.json.xz"
    path.write_bytes(lzma.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_each_step_is_won_or_lost_by_when_the_plan_kernel_began(tmp_path):
    rows = races(kernels(trace(tmp_path, {2, 5})), steps=6)
    assert len(rows) == 6
    lost = [r for r in rows if r["lost"]]
    assert len(lost) == 2 and all(r["after"] == 1 and r["before"] == 0 for r in rows)
    assert [r["before_end_us"] for r in lost] == [2.0, 2.0]  # in the gap after `a`
    assert {r["before_end_us"] for r in rows if not r["lost"]} == {-5.0}  # while `a` ran
    assert all(r["after_us"] == 600 and r["after_wait_us"] == 88 for r in lost)


def test_the_report_names_its_trace_and_counts(tmp_path, capsys):
    path = trace(tmp_path, {3})
    (tmp_path / "timeline.md").write_text("`python bench/kernel_timeline.py X --strategies "
                                          "corun`: the training stream's ...")
    out = tmp_path / "race.md"
    assert main([str(path), "--steps", "6", "-o", str(out)]) == 0
    text = out.read_text()
    assert "1 of 6 steps lost the race" in text
    assert "captured by `python bench/kernel_timeline.py X --strategies corun`" in text
    bad = tmp_path / "bad.md"
    with pytest.raises(SystemExit) as e:  # --steps 0: refused, nothing written
        main([str(path), "--steps", "0", "-o", str(bad)])
    assert e.value.code == 2 and not bad.exists()
    assert "--steps 0: an integer >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a trace that is not there: named, nothing written
        main([str(tmp_path / "missing.trace.json"), "-o", str(bad)])
    assert "missing.trace.json: no such file" in capsys.readouterr().err and not bad.exists()
