"""docs/results.md and the README's trust table, rendered from the validation dataset.

Nothing here measures or predicts: it reads `spec.validation.Dataset` and writes Markdown,
so the same data always gives the same text (a test compares the committed files)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from corun.reports.benchmarks import benchmarks_section
from corun.reports.markdown import markdown_table
from corun.reports.repeats import Repeats, repeats_by
from corun.spec.provenance import short_commit
from corun.spec.ranking import predicted_rank_key
from corun.spec.validation import Dataset, MeasuredCase

WITHIN_PCT = 5.0
"""An error at most this far off counts as a good prediction (the planner's own target)."""
NOISE_PCT = 2.0
"""A measured gap below this between two strategies is within a lent machine's swing."""
TABLE_START = "<!-- trust-table:start (corun validate render) -->"
TABLE_END = "<!-- trust-table:end -->"


@dataclass(frozen=True)
class Errors:
    """Absolute errors (%) of a group of predicted cases."""

    errors_pct: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.errors_pct)

    @property
    def within(self) -> int:
        """How many are at most WITHIN_PCT off."""
        return sum(x <= WITHIN_PCT for x in self.errors_pct)

    @property
    def within_share_pct(self) -> float:
        return 100 * self.within / self.n

    def cells(self) -> list[str]:
        if not self.errors_pct:
            return ["0", "-", "-", "-"]
        e = self.errors_pct
        return [str(len(e)), f"{statistics.median(e):.1f}%", f"{statistics.mean(e):.1f}%",
                f"{self.within} ({self.within_share_pct:.0f}%)"]


ERROR_HEAD = ["cases", "median abs error", "mean abs error", f"within {WITHIN_PCT:g}%"]
REPEAT_HEAD = f"repeats within {WITHIN_PCT:g}% of their rounds' median"
"""The floor under the errors (reports/repeats.py): a plan run in several rounds of one
command, each round against the median of them all."""


@dataclass(frozen=True)
class Ranking:
    """Per command with two or more predicted strategies besides ideal: was the strategy
    predicted fastest the measured fastest, and what did choosing it cost."""

    right: int
    near: int
    """Wrong, but measured within NOISE_PCT of the measured fastest."""
    commands: int
    regrets_pct: tuple[float, ...]

    def cells(self) -> list[str]:
        if not self.commands:
            return ["0", "-", "-"]
        return [str(self.commands), f"{self.right + self.near} ({self.right} exact)",
                f"{statistics.median(self.regrets_pct):.2f}%"]


RANK_HEAD = ["commands", f"best picked (within {NOISE_PCT:g}%)", "median regret"]


def mode(c: MeasuredCase) -> str:
    return "graphed" if c.cuda_graphs else "eager"


def gpu(c: MeasuredCase) -> str:
    """The GPU kind a case ran on, as its preset names it (H100, H200, ...); the device's own
    name where it has no preset (a CPU check run)."""
    from corun.spec import SpecError
    from corun.spec.hardware import preset_of_device

    try:
        return preset_of_device(c.machine).upper()
    except SpecError:
        return c.machine


def setting(c: MeasuredCase) -> str:
    """The README's rows: GPU kind, step mode and GPU count."""
    return f"{gpu(c)}, {mode(c)}, {c.gpus} GPU{'s' if c.gpus > 1 else ''}"


def predicted_cases(ds: Dataset) -> list[tuple[MeasuredCase, float]]:
    """Every case with a prediction, beside its signed error (%)."""
    out = []
    for c in ds.measured:
        e = ds.error_pct(c)
        if not math.isnan(e):
            out.append((c, e))
    return out


def predicted_ms(c: MeasuredCase, error_pct: float) -> float:
    """A case's predicted mean iteration, from its measured one and the signed error."""
    return c.mean_iteration_ms * (1 + error_pct / 100)


def errors_by(pairs: Iterable[tuple[MeasuredCase, float]],
              key: Callable[[MeasuredCase], str]) -> dict[str, Errors]:
    groups: dict[str, list[float]] = defaultdict(list)
    for c, e in pairs:
        groups[key(c)].append(abs(e))
    return {k: Errors(tuple(v)) for k, v in sorted(groups.items())}


def rankings_by(pairs: Iterable[tuple[MeasuredCase, float]],
                key: Callable[[MeasuredCase], str]) -> dict[str, Ranking]:
    """Per command (source and workload), each strategy's median round measured and
    predicted, the pick the fastest predicted (alike ones in the planner's order,
    spec.ranking); the commands grouped by `key` of their first case."""
    runs: dict[tuple, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    first: dict[tuple, MeasuredCase] = {}
    for c, e in pairs:
        if c.strategy == "ideal":
            continue
        k = (c.source, c.workload)
        first.setdefault(k, c)
        runs[k][c.strategy].append((c.mean_iteration_ms, predicted_ms(c, e)))
    acc: dict[str, list[tuple[bool, bool, float]]] = defaultdict(list)
    for k, strategies in runs.items():
        if len(strategies) < 2:
            continue
        med = {s: (statistics.median(m for m, _ in v), statistics.median(p for _, p in v))
               for s, v in strategies.items()}
        best_p = min(med, key=lambda s: predicted_rank_key(med[s][1], s))
        best_m = min(med, key=lambda s: (med[s][0], s))
        regret = 100 * (med[best_p][0] / med[best_m][0] - 1)
        acc[key(first[k])].append((best_p == best_m, regret <= NOISE_PCT, regret))
    return {g: Ranking(sum(r for r, _, _ in v), sum(n and not r for r, n, _ in v), len(v),
                       tuple(x for _, _, x in v)) for g, v in sorted(acc.items())}


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table as lines (reports.markdown.markdown_table)."""
    return markdown_table(head, rows).split("\n")


def calibrated(pairs: list[tuple[MeasuredCase, float]]) -> list[tuple[MeasuredCase, float]]:
    """Each case but ideal, its prediction scaled by its own command's measured ideal over
    the predicted one (as `--calibration` scales a plan's): held out, since the ideal that
    calibrates it is not among the cases it is judged on."""
    ideal: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for c, e in pairs:
        if c.strategy == "ideal":
            ideal[c.source, c.workload].append((c.mean_iteration_ms, predicted_ms(c, e)))
    out = []
    for c, e in pairs:
        rounds = ideal.get((c.source, c.workload))
        if c.strategy == "ideal" or not rounds:
            continue
        factor = statistics.median(m for m, _ in rounds) / statistics.median(p for _, p in rounds)
        out.append((c, 100 * (predicted_ms(c, e) * factor / c.mean_iteration_ms - 1)))
    return out


def trust_table(ds: Dataset) -> list[str]:
    """By step mode and GPU count, over the newest measurement of each workload: how close
    the predictions came, as they are and calibrated by the command's own ideal, and how
    often the strategy predicted fastest was the measured fastest."""
    pairs = newest_per_workload(predicted_cases(ds))
    errs, ranks = errors_by(pairs, setting), rankings_by(pairs, setting)
    cal = errors_by(calibrated(pairs), setting)
    reps = repeats_by((c for c, _ in pairs), setting)
    empty, none, no_reps = Ranking(0, 0, 0, ()), Errors(()), Repeats(())
    rows = [[k, *_short(errs[k]), _short(cal.get(k, none))[2],
             reps.get(k, no_reps).within(WITHIN_PCT), *ranks.get(k, empty).cells()]
            for k in errs]
    every = Repeats(tuple(x for r in reps.values() for x in r.deviations_pct))
    rows.append(["all", *_short(Errors(tuple(abs(e) for _, e in pairs))),
                 _short(Errors(tuple(abs(e) for _, e in calibrated(pairs))))[2],
                 every.within(WITHIN_PCT), *_total(ranks.values()).cells()])
    return table(["setting", "cases", "median abs error", f"within {WITHIN_PCT:g}%",
                  f"within {WITHIN_PCT:g}%, calibrated", REPEAT_HEAD, *RANK_HEAD], rows)


def _short(e: Errors) -> list[str]:
    """cases, median abs error, within 5%."""
    cells = e.cells()
    return [cells[0], cells[1], cells[3]]


def _total(ranks: Iterable[Ranking]) -> Ranking:
    ranks = list(ranks)
    return Ranking(sum(r.right for r in ranks), sum(r.near for r in ranks),
                   sum(r.commands for r in ranks), tuple(x for r in ranks for x in r.regrets_pct))


def provenance(ds: Dataset) -> str:
    machines = sorted({c.machine for c in ds.measured})
    days = sorted({c.measured_on for c in ds.measured})
    commits = sorted({p.predicted_commit for p in ds.predicted.values()})
    sources = len({c.source for c in ds.measured})
    return (f"{len(ds.measured)} executed cases from {sources} commands on "
            f"{', '.join(machines)}, measured {days[0]} to {days[-1]}; predicted at "
            f"commit {', '.join(commits) or '(none yet)'}.")


def results_markdown(ds: Dataset, command: str, fitted_on: frozenset[str],
                     benchmarks: dict[str, object] | None = None) -> str:
    """The whole results page; `fitted_on`: the GPU kinds (H200, ...) whose data the cost
    model was fitted on, the others' cases being held out; `benchmarks`: the committed
    benchmark files' documents (reports/benchmarks.py), by file name."""
    pairs = predicted_cases(ds)
    unmodelled = [c for c in ds.measured if not c.modelled]
    unsimulated = [c for c in ds.measured if c.modelled and math.isnan(ds.error_pct(c))]
    newest = newest_per_workload(pairs)
    lines = ["# Results: predicted against measured", "",
             f"Rendered by `{command}` from `validation/` (do not edit by hand). "
             + provenance(ds), "",
             "Each case is one strategy run once: its mean iteration as the throughput "
             "counts it (every slow step included), against the mean iteration the "
             "simulator predicts for the same plan, model, batch and step mode. Errors are "
             f"in % of the measured time. A command's best is picked right where the "
             f"strategy predicted fastest ran within {NOISE_PCT:g}% of the measured "
             "fastest (strategies predicted alike taken in the planner's order, as `corun "
             "tune` ranks them); regret is what choosing it cost.", "",
             "## The newest measurement of each workload, by step mode and GPU count", "",
             "Per workload, only the cases measured on the last day it was measured: what "
             "the model says of the trainer as it runs now. Calibrated: each case's "
             "prediction scaled by the ideal step measured in the same command, as "
             "`--calibration` does (the ideal itself left out). Repeats: where a command "
             "ran the same plan in several rounds, how many rounds lie within "
             f"{WITHIN_PCT:g}% of the median of them all, the best any one predicted time "
             "could do.", "", *trust_table(ds), "",
             "## Every case, by step mode and GPU count", "",
             "Older commands ran older trainers; their errors say as much about the "
             "trainer's changes as about the model.", ""]
    all_e, all_r = errors_by(pairs, setting), rankings_by(pairs, setting)
    empty = Ranking(0, 0, 0, ())
    lines += table(["setting", *ERROR_HEAD, *RANK_HEAD],
                   [[k, *v.cells(), *all_r.get(k, empty).cells()] for k, v in all_e.items()])
    lines += ["",
             "## Every case, by model", ""]
    by_model_e, by_model_r = errors_by(pairs, lambda c: c.model), rankings_by(
        pairs, lambda c: c.model)
    lines += table(["model", *ERROR_HEAD, *RANK_HEAD],
                   [[k, *v.cells(), *by_model_r.get(k, empty).cells()]
                    for k, v in by_model_e.items()])
    lines += ["", "## Held out: GPU kinds no fit has seen", "",
              "Every case of a GPU kind whose data entered no fit of the cost model (fitted "
              f"on {', '.join(sorted(fitted_on))}), by workload: the fitted kind's times "
              "carried by the two kinds' ceilings (docs/method.md, GPU kinds no profile has "
              "seen).", ""]
    held = [(c, e) for c, e in pairs if gpu(c) not in fitted_on]
    he = errors_by(held, lambda c: f"{gpu(c)} {c.workload}")
    hr = rankings_by(held, lambda c: f"{gpu(c)} {c.workload}")
    lines += table(["workload", *ERROR_HEAD, *RANK_HEAD],
                   [[k, *v.cells(), *hr.get(k, empty).cells()] for k, v in he.items()])
    lines += machine_section(ds)
    lines += ["", "## The newest measurement of each workload", ""]
    ne = errors_by(newest, lambda c: f"{gpu(c)} {c.workload}")
    nr = rankings_by(newest, lambda c: f"{gpu(c)} {c.workload}")
    nrep = repeats_by((c for c, _ in newest), lambda c: f"{gpu(c)} {c.workload}")
    lines += table(["workload", *ERROR_HEAD, REPEAT_HEAD, *RANK_HEAD],
                   [[k, *v.cells(), nrep.get(k, Repeats(())).within(WITHIN_PCT),
                     *nr.get(k, empty).cells()] for k, v in ne.items()])
    lines += ["", "## Cases without a prediction", "",
              f"- {len(unmodelled)} ran a variant the simulator does not model: "
              + _reasons(c.note for c in unmodelled),
              f"- {len(unsimulated)} ran a plan today's code cannot simulate: "
              + _reasons(_refused_field(ds, c) for c in unsimulated), ""]
    lines += benchmarks_section(benchmarks or {})
    return "\n".join(lines)


def on_machine_cases(ds: Dataset, machine: str) -> list[tuple[MeasuredCase, float, float]]:
    """The cases predicted with machine profile `machine`: each with its signed error with
    the preset (%) and with the profile (%); cases either could not predict left out."""
    out = []
    for c in ds.measured:
        preset, on = ds.error_pct(c), ds.error_pct(c, machine)
        if not (math.isnan(preset) or math.isnan(on)):
            out.append((c, preset, on))
    return out


def own_host_cases(ds: Dataset, machine: str) -> list[tuple[MeasuredCase, float, float]]:
    """`on_machine_cases` measured on the profile's own host (the same boot id): what a
    user who calibrates their machine and then runs on it sees."""
    host = ds.machines[machine].versions.get("host_id", "")
    return [x for x in on_machine_cases(ds, machine) if host and x[0].host_id == host]


def _host_notes(h) -> str:
    """Where a profile's host costs were timed, and how far its rounds' eager steps lay
    apart, in parentheses (nothing where neither is known)."""
    notes = [h.measured_on] if h.measured_on else []
    if (band := h.round_band_ms) is not None:
        notes.append(f"eager step {band[0]:.3f}-{band[1]:.3f} ms by round, "
                     f"{h.step_spread_pct:.0f}% apart")
    return f" ({'; '.join(notes)})" if notes else ""


def _own_host_line(cases: list[tuple[MeasuredCase, float, float]], profiles: int) -> str:
    """The own-host cases' errors with the preset and with their profile, and how well
    the cases' own rounds repeat (what bounds any prediction of them)."""
    pre, on = (Errors(tuple(abs(x[i]) for x in cases)) for i in (1, 2))
    unique = {c.case_id: c for c, _, _ in cases}.values()
    reps = repeats_by(unique, lambda c: "all").get("all", Repeats(()))
    return (f"On the profile's own host ({pre.n} cases from {profiles} profile"
            f"{'s' if profiles > 1 else ''}): within {WITHIN_PCT:g}% {pre.within_share_pct:.0f}% "
            f"with the preset, {on.within_share_pct:.0f}% with the profile; mean abs error "
            f"{statistics.mean(pre.errors_pct):.1f}% against "
            f"{statistics.mean(on.errors_pct):.1f}%; the cases' rounds lie within "
            f"{WITHIN_PCT:g}% of their median in {reps.within(WITHIN_PCT)}.")


def machine_summary(ds: Dataset) -> list[str]:
    """One line per GPU kind with machine profiles: its cases' error with the preset,
    against the range over its profiles (docs/results.md has each profile's table)."""
    kinds: dict[str, list[tuple[Errors, Errors]]] = defaultdict(list)
    own: dict[str, list[list]] = defaultdict(list)
    for name, profile in sorted(ds.machines.items()):
        cases, mine = on_machine_cases(ds, name), own_host_cases(ds, name)
        if mine:
            own[profile.gpu_preset.upper()].append(mine)
        if cases:
            kinds[profile.gpu_preset.upper()].append(
                (Errors(tuple(abs(p) for _, p, _ in cases)),
                 Errors(tuple(abs(o) for _, _, o in cases))))
    lines = []
    for kind, pairs in sorted(kinds.items()):
        pre = pairs[0][0]
        within = sorted(on.within_share_pct for _, on in pairs)
        mean = sorted(statistics.mean(on.errors_pct) for _, on in pairs)
        lines += [f"{kind} with a machine profile (`corun calibrate`; {len(pairs)} profiles, "
                  f"each predicting all {pre.n} {kind} cases): within {WITHIN_PCT:g}% "
                  f"{pre.within_share_pct:.0f}% of "
                  f"cases with the preset, {within[0]:.0f}-{within[-1]:.0f}% with a profile; "
                  f"mean abs error {statistics.mean(pre.errors_pct):.1f}% against "
                  f"{mean[0]:.1f}-{mean[-1]:.1f}%."
                  + (" " + _own_host_line([x for c in own[kind] for x in c], len(own[kind]))
                     if own[kind] else ""), ""]
    return lines


def _in_steps(profile) -> str:
    """How many of a profile's kernels it also timed in their plan's step (none: '')."""
    stepped = sum(k.release is not None for k in profile.kernels)
    return f" ({stepped} also in their plan's step)" if stepped else ""


def machine_section(ds: Dataset) -> list[str]:
    """Per machine profile (`corun calibrate`), its GPU kind's cases predicted with the
    preset and with the profile, by workload and overall."""
    if not ds.machines:
        return []
    lines = ["", "## Predicted with a machine profile", "",
             "Each profile in `validation/machines/` was measured by `corun calibrate` "
             "(its device, day and commit below); its GPU kind's cases are predicted with "
             "the preset, then with the profile's measured ceilings and host costs "
             "(`--machine`). No case entered the profile: it is timed on its own runs.", ""]
    for name, profile in sorted(ds.machines.items()):
        cases = on_machine_cases(ds, name)
        h = profile.host
        lines += [f"### {name}: {profile.device}, {profile.created_utc[:10]}, commit "
                  f"{short_commit(profile.git_commit)}", "",
                  f"Copy {profile.copy_bytes_per_s / 1e12:.2f} TB/s, bf16 GEMM "
                  f"{profile.gemm_bf16_flops_per_s / 1e12:.0f} TFLOP/s; host step "
                  f"{h.step_ms:.3f} ms eager and {h.graph_step_ms:.3f} ms graphed, "
                  f"{h.kernel_launch_ms:.3f} ms a kernel launch, "
                  + (f"{h.plan_step_ms:.3f} ms more a plan's step, " if h.plan_step_ms else "")
                  + f"{h.batch_fixed_ms:.3f} ms a batch{_host_notes(h)}"
                  + (f"; {len(profile.stages)} stage and {len(profile.kernels)} kernel "
                     f"timings{_in_steps(profile)}, measured in {profile.measured_s:.0f} s"
                     if profile.measured_s else "") + ".", ""]
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for c, preset, on in cases:
            groups[c.workload].append((abs(preset), abs(on)))
            groups["all"].append((abs(preset), abs(on)))
        reps = repeats_by((c for c, _, _ in cases), lambda c: c.workload)
        reps["all"] = Repeats(tuple(x for r in reps.values() for x in r.deviations_pct))
        rows = []
        for k in [*sorted(g for g in groups if g != "all"), "all"]:
            if k not in groups:
                continue
            pre, on = (Errors(tuple(x[i] for x in groups[k])) for i in (0, 1))
            rows.append([k, str(pre.n), pre.cells()[2], pre.cells()[3], on.cells()[2],
                         on.cells()[3], reps.get(k, Repeats(())).within(WITHIN_PCT)])
        pairs_on = [(c, e) for c, _, e in cases]
        ranks = _total(rankings_by(pairs_on, lambda c: "all").values())
        lines += table(["workload", "cases", "mean abs error, preset",
                        f"within {WITHIN_PCT:g}%, preset", "mean abs error, profile",
                        f"within {WITHIN_PCT:g}%, profile", REPEAT_HEAD], rows)
        lines += ["", "With the profile, best picked (within "
                  f"{NOISE_PCT:g}%) in {ranks.right + ranks.near} of {ranks.commands} "
                  "commands.", ""]
        mine = own_host_cases(ds, name)
        if mine:
            lines += [_own_host_line(mine, 1) + " Those cases' sources: "
                      + ", ".join(sorted({c.source for c, _, _ in mine})) + ".", ""]
    return lines


def _refused_field(ds: Dataset, c: MeasuredCase) -> str:
    """The field today's code refused in a case's plan ("not simulated: FIELD = ...")."""
    p = ds.predicted.get(c.case_id)
    if p is None:
        return "not predicted yet"
    return p.note.removeprefix("not simulated: ").split(" = ")[0]


def _reasons(notes: Iterable[str]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for n in notes:
        counts[n or "unnamed"] += 1
    return "; ".join(f"{n} ({k})" for n, k in sorted(counts.items(), key=lambda x: -x[1])) or "-"


def newest_per_workload(pairs: list[tuple[MeasuredCase, float]]) -> list:
    """The cases measured on the last day their workload was measured: the trainer as it
    runs now, not as it ran in older commands."""
    last: dict[tuple[str, str], str] = {}
    for c, _ in pairs:
        key = (gpu(c), c.workload)
        last[key] = max(last.get(key, ""), c.measured_on)
    return [(c, e) for c, e in pairs if c.measured_on == last[gpu(c), c.workload]]


def readme_with_table(readme: str, ds: Dataset) -> str:
    """The README with its trust table rendered afresh between the markers."""
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md: no {TABLE_START} ... {TABLE_END} block")
    block = "\n".join([TABLE_START, "", provenance(ds), "", *trust_table(ds), "",
                       *machine_summary(ds)])
    return readme[:start] + block + "\n" + readme[end:]
