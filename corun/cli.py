"""The `corun` command line. Heavy packages load only inside the commands that need them."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from corun.out_folder import out_folder
from corun.spec import SpecError
from corun.spec.provenance import corun_version


def _presets(_: argparse.Namespace) -> int:
    from corun.format import table
    from corun.spec import GPU_KINDS, LINKS, MODEL_PRESETS, PIPELINE_PRESETS, pipeline_preset

    print("hardware (--hardware):")
    print(
        table(
            ["name", "gpu", "SMs", "HBM GB", "copy TB/s"],
            [
                [
                    k,
                    g.name,
                    g.sm_count,
                    f"{g.hbm_bytes / 1e9:.0f}",
                    f"{g.copy_bytes_per_s / 1e12:.2f}",
                ]
                for k, g in GPU_KINDS.items()
            ],
        )
    )
    print("\ninterconnects (--interconnect):")
    print(
        table(
            ["name", "link", "GB/s per direction"],
            [[k, v.name, f"{v.bytes_per_s / 1e9:.0f}"] for k, v in LINKS.items()],
        )
    )
    print("\nmodels (--model):")
    print(
        table(
            ["name", "tables", "rows (M)", "interaction", "optimizer"],
            [
                [
                    k,
                    len(m.tables),
                    f"{sum(t.rows for t in m.tables) / 1e6:.1f}",
                    m.interaction.value,
                    m.optimizer.value,
                ]
                for k, m in MODEL_PRESETS.items()
            ],
        )
    )
    print("\npipelines (--pipeline):")
    rows = []
    for k in PIPELINE_PRESETS:
        p = pipeline_preset(k)
        rows.append([k, len(p.nodes), len(p.dense_outputs), len(p.sparse_outputs)])
    print(table(["name", "op nodes", "dense", "sparse"], rows))
    return 0


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from corun.out_folder import staged_folder
    from corun.reports.summary import report

    with staged_folder(args.out, command_line()) as out:
        path = report(args.files, out)
    print(f"wrote {Path(args.out) / path.relative_to(out)}")
    return 0


# command -> (module with add_arguments(parser) and run(args), help)
COMMANDS = {
    "simulate": ("corun.simulate_cmd", "predict strategies with the simulator"),
    "plan": ("corun.plan_cmd", "search the best plan and compare it with every strategy"),
    "whatif": ("corun.whatif_cmd", "plan a grid of hardware, GPU counts and batches"),
    "preprocess": ("corun.preprocess_cmd", "run a pipeline over Criteo-format or synthetic "
                   "data, checked against the reference"),
    "profile": ("corun.profile_cmd", "measure fused kernels co-running with training "
                "stages (resumable CSV)"),
    "calibrate": ("corun.calibrate_cmd", "measure this machine's GPU ceilings and host "
                  "costs into a machine profile (plan --machine predicts with it)"),
    "fit": ("corun.fit_cmd", "fit the learned co-running model on a profile CSV and "
            "report its held-out error"),
    "execute": ("corun.execute_cmd", "run a plan or strategy beside training on a GPU and "
                "measure it"),
    "tune": ("corun.tune_cmd", "run a plan folder's plans on the GPU in rounds and keep the "
             "fastest"),
    "validate": ("corun.validate_cmd", "the validation dataset: add measured cases, predict "
                 "them again, render the results"),
}


SINGLE_THREADED = frozenset({"plan", "simulate", "whatif", "validate"})
"""Commands made of many small model predictions: native thread pools are held to one
thread there (costmodel.threads), so a busy machine does not starve them."""

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corun", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {corun_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("presets", help="list hardware, model and pipeline presets").set_defaults(
        func=_presets)
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    p = sub.add_parser("report", help="figures and a Markdown summary from prediction and "
                       "measurement files")
    p.add_argument("files", nargs="+", help="Prediction and Measurement JSON files")
    p.add_argument("--out", type=out_folder, required=True, help="output directory")
    p.set_defaults(func=_report)
    return parser


def _terminated(signum, frame) -> None:
    """SIGTERM ends a command as Ctrl-C does: its half-made outputs removed, its workers
    stopped."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        if getattr(args, "config", None):
            merge_config(parser, args, sys.argv[1:] if argv is None else argv)
        if args.command in SINGLE_THREADED:
            from corun.costmodel.threads import single_threaded

            with single_threaded():
                return args.func(args)
        return args.func(args)
    except SpecError as e:
        print(f"corun: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("corun: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`corun plan | head`): stop quietly
        sys.stderr.close()
        return 0
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def progress(quiet: bool):
    """The commands' progress printer: lines to stderr, flushed, or nothing with --quiet
    (stdout keeps the tables and JSON a user may pipe)."""
    if quiet:
        return lambda *a: None
    return lambda *a: print(*a, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """A warning on stderr, shown with --quiet too."""
    print(f"corun: warning: {message}", file=sys.stderr, flush=True)


def command_line() -> str:
    """The command as typed, for a Measurement's record (`python -m corun.cli ...` and
    `torchrun ... -m corun.cli ...` read as `corun ...`)."""
    import shlex

    return "corun " + shlex.join(sys.argv[1:])


_UNSET = object()


def merge_config(parser: argparse.ArgumentParser, args: argparse.Namespace,
                 argv: list[str]) -> None:
    """The config file's options into `args`, in one place: a flag given on the command line
    wins (abbreviated too), and a config value passes the flag's own checks (its type and
    choices; a switch takes true or false)."""
    from corun.workload import read_config

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices[args.command]
    rest = argv[argv.index(args.command) + 1:]
    actions = {a.dest: a for a in command._actions}
    probe = argparse.Namespace(**dict.fromkeys(actions, _UNSET))
    given = {k for k, v in vars(command.parse_known_args(rest, probe)[0]).items()
             if v is not _UNSET}
    for key, value in read_config(args.config).items():
        if key not in actions:
            raise SpecError(f"config {key}", value, f"an option of corun {args.command}")
        if key not in given:
            setattr(args, key, _config_value(actions[key], key, value))


def _config_value(action: argparse.Action, key: str, value):
    """A config file's `value` for `action` as its flag would take it, or a SpecError naming
    the key and what is allowed."""
    field = f"config {key}"
    if action.nargs == 0:  # a switch
        if not isinstance(value, bool):
            raise SpecError(field, value, "true or false")
        return value
    if action.type is not None and not isinstance(value, dict):
        try:
            value = action.type(str(value))
        except (ValueError, TypeError, argparse.ArgumentTypeError) as e:
            raise SpecError(field, value, f"a value its flag takes ({e})") from None
    if action.choices is not None and value not in action.choices:
        raise SpecError(field, value, f"one of {', '.join(map(str, action.choices))}")
    return value


if __name__ == "__main__":
    sys.exit(main())
