"""The ``bcast`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from . import __version__
from .api import elementwise_plan, plan
from .errors import BroadcastError, brief
from .files import show

__all__ = ["main"]

_EXIT = """exit status, the same for every command: 0 success (a clean model, shapes that broadcast),
1 problems found (a model's problems, shapes that clash), 2 a usage error or unreadable input
(a bad argument or mode, a shape that cannot be read, a model that cannot be read or is no valid
graph), 3 an internal error (a bug of bcast: rerun with --debug and report it)
"""

_EPILOG = (
    """examples:
  bcast check model.onnx                       every broadcasting node of an ONNX model, and its problems
  bcast check model.xml --json                 the same for an OpenVINO IR (.xml + .bin), as JSON
  bcast check --sample                         the sample model shipped with bcast (it has a bug)
  bcast infer "[3,1]" "[1,4]"                  elementwise operands A B: -> [3,4]
  bcast infer "[16,1,1]" --to "[1,16,50,50]"   data -> target: -> [1,16,50,50]
  bcast explain "[512,512]" --to "[8,512,512,16]" --mode explicit --axes-mapping 1,2
  bcast explain "[1,4,5]" "[2,3,1,1]" --svg b.svg   elementwise operands, and a picture

`bcast check` needs NumPy alone; `bcast rule CODE` explains a finding's rule code

"""
    + _EXIT
    + """
limits: a SHAPE argument has at most 64 dims and 4096 characters; see `bcast check --help`
for the limits on models
"""
)

_CHECK_EPILOG = """examples:
  bcast check model.onnx            a report: nodes, symbolic dims, problems
  bcast check model.xml --json      OpenVINO IR (the .bin beside it), machine-readable
  bcast check model.onnx --quiet    one line per problem, then the combined result; nothing when clean
  bcast check model.onnx --quiet --json   only the problems and the verdict, as JSON
  bcast check model.onnx --html r.html    also write the report as an HTML page
  bcast check --sample              the sample model shipped with bcast

  bcast check exports/ 'zoo/**/*.onnx' -j 4   many models: folders (searched for .onnx and IR .xml), globs
  bcast check exports/ --format sarif         SARIF 2.1.0 (also github, junit, json)
  bcast check m.onnx --select BC1 --ignore BC104   rules by code (bcast rule --all lists them)
  bcast check exports/ --write-baseline b.json     accept today's findings; later: --baseline b.json

settings: bcast.toml, .bcast.toml or [tool.bcast] in pyproject.toml (the nearest; --config FILE,
--isolated); every option above may be set there (docs/guide/cli.md)

exit status, the worst over the models: 0 no problems, 1 problems found, 2 a model cannot be
read (missing, not a regular file, too large, truncated, not a model, not a valid graph) or a
usage error, 3 an internal error (a bug of bcast: rerun with --debug for the traceback, and report it)

limits: only regular files are read (no FIFO or device; a folder is searched for models); an .onnx file of at most
2 GiB (protobuf's limit; external data files are never read); an IR .xml of at most 128 MiB (its
.bin is read only for the few small constants that give shapes); ranks and constant shapes of at
most 64 values; TensorIterator/Loop/If bodies nested at most 32 deep
"""

#: what each mode does in each form: (A B ..., DATA --to TARGET); every mode of bcast.MODES (a test checks it)
_MODE_HELP = {
    "numpy": (
        "multidirectional (NumPy, ONNX), any number of operands",
        "one-directional (Broadcast-1 numpy, ONNX unidirectional)",
    ),
    "bidirectional": ("two operands, as numpy", "DATA * ones(TARGET) (Broadcast-3, ONNX Expand)"),
    "pdpd": ("B broadcast into A starting at --axis (-1: right-aligned), B -> A only", "DATA is B, TARGET is A"),
    "legacy": (
        "ONNX opset 1-6 broadcast=1: B broadcast into A at --axis (-1: right-aligned)",
        "DATA is B, TARGET is A",
    ),
    "none": ("the shapes must be equal", "DATA must equal TARGET"),
    "explicit": (None, "DATA axis i lands on TARGET axis --axes-mapping[i]"),
    "axes": (None, "nGraph Broadcast, output = TARGET; --broadcast-axes are the new output axes"),
    "like": (None, "nGraph BroadcastLike; --broadcast-axes are the initial axes"),
}


def _mode_lines(mode: str) -> str:
    both, one_way = _MODE_HELP[mode]
    operands = "A B [C ...]" if mode == "numpy" else "A B"
    first = f"{operands}: {both}" if both else "needs --to (there is no elementwise form)"
    return f"  {mode:<14} {first}\n  {'':<14} DATA --to TARGET: {one_way}"


def _shapes_description(name: str) -> str:
    what = {
        "infer": "Print the output shape, then one line per constraint on a symbolic dim.",
        "explain": "Show how the shapes line up, what is replicated, and where they clash.",
    }[name]
    modes = "\n".join(_mode_lines(m) for m in _MODE_HELP)
    return f"""{what}

two forms:
  elementwise     bcast {name} A B [C ...]      the operands of one elementwise operation,
                  as bcast.broadcast_shapes(A, B, ..., mode=, axis=) / bcast.elementwise_plan
  data -> target  bcast {name} DATA --to TARGET  DATA broadcast to TARGET,
                  as bcast.infer(DATA, TARGET, mode, ...) / bcast.plan

modes (--mode; numpy, the default, means the same as no --mode in each form):
{modes}
"""


def _shapes_epilog(name: str) -> str:
    if name == "infer":
        examples = """examples:
  bcast infer "[3,1]" "[1,4]"                   elementwise A B: -> [3,4]
  bcast infer "[N,1]" "[4,5]"                   -> [4,5] and N in {1, 4}
  bcast infer "[2,3,4,5]" "[3,4]" --mode pdpd --axis 1   A B: B into A at axis 1 -> [2,3,4,5]
  bcast infer "[3,1]" --to "[2,1,6]" --mode bidirectional   data -> target: -> [2,3,6]
  bcast infer "[16,1,1]" --to "[1,16,50,50]"    data -> target, one-directional numpy
  bcast infer "[3,4]" --to "[2,3,4,5]" --mode pdpd --axis 1   DATA is B, TARGET is A
  bcast infer "[3,1]" "[1,4]" --json            shapes as lists: static dims ints, symbols strings
"""
    else:
        examples = """examples:
  bcast explain "[1,4,5]" "[2,3,1,1]"           elementwise A B: the axes lined up
  bcast explain "[1,4,5]" "[2,3,1,1]" --svg b.svg   and a picture
  bcast explain "[3,1,5]" "[4,4,5]" --svg c.svg     a clash: the table and the picture mark it (exit 1)
  bcast explain "[2,3,4,5]" "[3,4]" --mode pdpd --axis 1   A B: B into A at axis 1
  bcast explain "[512,512]" --to "[8,512,512,16]" --mode explicit --axes-mapping 1,2
  bcast explain "[16,1,1]" --to "[1,16,50,50]"  data -> target, one-directional numpy
"""
    return examples + "\n" + _EXIT


#: exit statuses (see --help)
OK, PROBLEMS, BAD_INPUT, INTERNAL_ERROR = 0, 1, 2, 3
#: the longest shape argument of infer / explain, in dims and in characters
MAX_SHAPE_DIMS, MAX_SHAPE_CHARS = 64, 4096


def _ints(text: str) -> list[int]:
    text = text.strip().strip("[]()")
    if not text:
        return []
    parts = text.split(",", 64)
    if len(parts) > 64:
        raise argparse.ArgumentTypeError(f"more than 64 axes in {brief(text)}")
    try:
        return [int(t) for t in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {brief(text)}") from None


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one short line (a hostile argument may hold escapes or be megabytes long)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{show(self.prog, 80)}: error: {show(message, 1000)} (see {show(self.prog, 80)} --help)\n")
        sys.exit(BAD_INPUT)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="bcast",
        description="Tensor broadcasting as NumPy, ONNX, OpenVINO, nGraph and PaddlePaddle define it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--debug", action="store_true", help="on an internal error, show the traceback")
    ap.add_argument("--version", action="version", version=f"bcast {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    _check_parser(sub)
    r = sub.add_parser("rule", help="explain a rule code of bcast check (bcast rule BC101), or list them all (--all)")
    r.add_argument("code", nargs="?", metavar="CODE", help="a rule code (BC101) or kind (cannot-broadcast)")
    r.add_argument("--all", action="store_true", help="list every rule: code, kind, severity, summary")
    for name, helptext in (
        ("infer", "print the output shape (and constraints): A B... elementwise, or DATA --to TARGET"),
        ("explain", "show how the shapes line up and what is replicated: A B..., or DATA --to TARGET"),
    ):
        p = sub.add_parser(
            name,
            help=helptext,
            usage=f"bcast {name} A B [C ...] [--mode numpy|bidirectional|pdpd|legacy|none] [--axis K] [options]\n"
            f"       bcast {name} DATA --to TARGET [--mode MODE] [--axes-mapping I,J] [--axis K]"
            " [--broadcast-axes I,J] [options]",
            description=_shapes_description(name),
            epilog=_shapes_epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument(
            "shapes",
            nargs="+",
            metavar="SHAPE",
            help='shapes such as "[2,?,1..8,N]": the operands A B..., or with --to the one DATA shape',
        )
        p.add_argument(
            "--to", metavar="TARGET", default=None, help="the data -> target form: broadcast the DATA shape to TARGET"
        )
        p.add_argument("--mode", default=None, metavar="MODE", help=f"one of {', '.join(_MODE_HELP)} (see above)")
        p.add_argument("--axes-mapping", type=_ints, default=None, metavar="I,J", help="explicit mode (--to): e.g. 1,2")
        p.add_argument(
            "--axis",
            type=int,
            default=-1,
            help="pdpd and legacy modes: where B starts in A (-1: right-aligned)",
        )
        p.add_argument(
            "--broadcast-axes", type=_ints, default=None, metavar="I,J", help="axes / like mode (--to): e.g. 0,2"
        )
        p.add_argument("--json", action="store_true", help="machine-readable output (shapes as lists)")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the table")
        if name == "explain":
            p.add_argument(
                "--svg", metavar="FILE", default=None, help="also draw the broadcast (or the clash) as an SVG picture"
            )
        _debug_flag(p)
    return ap


def _check_parser(sub: Any) -> None:
    """``bcast check``'s options."""
    c = sub.add_parser(
        "check",
        help="check every broadcasting node of an ONNX model or OpenVINO IR",
        epilog=_CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument(
        "model",
        nargs="*",
        metavar="MODEL",
        help="an .onnx file, an OpenVINO IR .xml (with its .bin), a folder (searched recursively for both) or a "
        "glob pattern (models/**/*.onnx); several may be given",
    )
    c.add_argument("--sample", action="store_true", help="check the sample model shipped with bcast")
    c.add_argument(
        "--format",
        choices=("text", "json", "sarif", "github", "junit"),
        default=None,
        help="the output: text (default), json, sarif (SARIF 2.1.0, for code scanning), github (workflow "
        "annotations), junit (JUnit XML)",
    )
    c.add_argument("--json", action="store_true", help="the same as --format json")
    c.add_argument(
        "--select",
        metavar="CODES",
        action="append",
        default=None,
        help="report only these rules: codes (BC101), prefixes (BC1), kinds or ALL, comma-separated (repeatable); "
        "`bcast rule --all` lists them",
    )
    c.add_argument(
        "--ignore", metavar="CODES", action="append", default=[], help="leave these rules out (as --select names them)"
    )
    _gate_options(c)


def _gate_options(c: argparse.ArgumentParser) -> None:
    """``bcast check``'s options for what fails the run and how models are run."""
    c.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="the settings file (default: the nearest bcast.toml, .bcast.toml or pyproject.toml [tool.bcast])",
    )
    c.add_argument("--isolated", action="store_true", help="read no settings file")
    c.add_argument("--baseline", metavar="FILE", default=None, help="leave out the findings this baseline accepts")
    c.add_argument(
        "--write-baseline",
        metavar="FILE",
        default=None,
        help="write every finding to FILE as accepted (a baseline for --baseline), and exit 0",
    )
    c.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="check models in N processes (default: the machine's cores)",
    )
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when problems are found")
    c.add_argument(
        "--memory-limit",
        type=int,
        default=None,
        metavar="MB",
        help="the most memory a worker process may take; a model that needs more is reported, the run goes on",
    )
    c.add_argument(
        "--skip-non-models",
        action="store_true",
        help="leave out a file named that is certainly no model (an .xml that is no OpenVINO IR): for hooks",
    )
    c.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="check the models on a Dask cluster (tcp://host:8786; needs dask.distributed)",
    )
    c.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="only the problems, one per line, then the combined result (symbolic dims, the count); nothing for a"
        " clean model; no progress bar. With --json: the JSON without its nodes",
    )
    c.add_argument("--html", metavar="FILE", default=None, help="also write the report as an HTML page to FILE")
    c.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default=None,
        help="the least severity that makes the exit status 1 (default: warning; error: only what fails for every "
        "size; info: notes too)",
    )
    c.add_argument(
        "--dim",
        metavar="NAME=SIZE",
        action="append",
        default=[],
        help="the size (S=128) or range (S=1..512, S=8..) the model is meant for, per symbolic dim (repeat it); "
        "an IR's unnamed dims are named after input and axis (input_ids_1)",
    )
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the report")
    _debug_flag(c)


def _debug_flag(p: argparse.ArgumentParser) -> None:
    # SUPPRESS: `bcast --debug check m.onnx` and `bcast check m.onnx --debug` both work
    p.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="on an internal error, the traceback"
    )


class _PipeSafe:
    """stdout that outlives its reader: once the output cannot be written (a pipe closed early, as in
    `bcast check m.onnx | head -1`; a full disk; stdout closed, `>&-`), the rest goes to /dev/null,
    and the command carries on to its own exit status: the check's, whatever happens to stdout."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.broken = stream is None

    def write(self, text: str) -> int:
        if not self.broken and self._stream is not None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):  # EPIPE, ENOSPC, EBADF; ValueError: a closed file
                self._broke()
        return len(text)

    def flush(self) -> None:
        if not self.broken and self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._broke()

    def _broke(self) -> None:
        self.broken = True
        if self._stream is None:
            return
        try:  # what the stream still buffers (and Python flushes at exit) goes nowhere, silently
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def isatty(self) -> bool:
        return bool(self._stream is not None and not self.broken and self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _internal_error(e: BaseException, debug: bool, prog: str = "bcast") -> int:
    if debug:
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    sys.stderr.write(
        f"{prog}: internal error: {show(what, 600)}; this is a bug of bcast, not of your input"
        + ("" if debug else " (rerun with --debug for the traceback)")
        + ", please report it\n"
    )
    return INTERNAL_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """The ``bcast`` command; returns the exit status (see ``bcast --help``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")  # a name that is not UTF-8 never stops the output
    real = sys.stdout
    safe = _PipeSafe(real)
    sys.stdout = safe
    try:
        rc = _main(args)
        safe.flush()
        return rc
    except KeyboardInterrupt:
        sys.stderr.write("bcast: interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("bcast: out of memory while working on the input; it is too large\n")
        return BAD_INPUT
    except Exception as e:  # a bug of bcast: never disguised as bad input
        return _internal_error(e, debug)
    finally:
        sys.stdout = real


#: development tools of the repository (not installed) that a user may call as subcommands: how to run each
_TOOLS = {
    "bench": "`make bench` (or `python -m benchmarks.bench`)",
    "tour": "`make tour` (or `python -m tools.tour`)",
}


def _main(argv: Sequence[str] | None = None) -> int:
    command = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    if command in _TOOLS:
        sys.stderr.write(f"bcast {command} is a development tool: run {_TOOLS[command]} in a clone of the repository\n")
        if command == "bench":  # which kernels it would time here: the benchmark's own first line
            from .engines.numpy import compiled

            sys.stderr.write(compiled.status() + "\n")
        return BAD_INPUT
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    if args.command == "check":
        return _check_command(args)
    if args.command == "rule":
        return _rule_command(args)
    return _shapes_command(args)


def _check_command(args: argparse.Namespace) -> int:
    from .check import sample_model_path
    from .check.command import run_checks

    if args.sample == bool(args.model):
        print("bcast check: give a MODEL path or --sample (one of them)", file=sys.stderr)
        return 2
    if args.jobs is not None and not 1 <= args.jobs <= 1024:
        print(f"bcast check: --jobs is a number of processes from 1 to 1024, not {args.jobs}", file=sys.stderr)
        return 2
    if args.json and args.format not in (None, "json"):
        print(f"bcast check: --json and --format {args.format} ask for two formats", file=sys.stderr)
        return 2
    if args.memory_limit is not None and args.memory_limit < 64:
        print(
            f"bcast check: --memory-limit is a number of megabytes of at least 64, not {args.memory_limit}",
            file=sys.stderr,
        )
        return 2
    if args.write_baseline and args.baseline:
        print("bcast check: --write-baseline writes a baseline, --baseline reads one: give one", file=sys.stderr)
        return 2
    targets = [sample_model_path()] if args.sample else args.model
    return run_checks(
        targets,
        fmt="json" if args.json else (args.format or "text"),
        quiet=args.quiet,
        colour=args.color,
        debug=args.debug,
        html=args.html,
        dims=args.dim,
        fail_on=args.fail_on,
        select=None if args.select is None else _codes(args.select),
        ignore=_codes(args.ignore),
        config=args.config,
        isolated=args.isolated,
        baseline=args.baseline,
        write_baseline=args.write_baseline,
        jobs=args.jobs,
        exit_zero=args.exit_zero,
        memory_limit=None if args.memory_limit is None else args.memory_limit << 20,
        scheduler=args.scheduler,
        skip_non_models=args.skip_non_models,
    )


def _codes(values: Sequence[str]) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _rule_command(args: argparse.Namespace) -> int:
    from .check.codes import RULES, get_rule, rule_page
    from .errors import BroadcastError

    if args.all == (args.code is not None):
        print("bcast rule: give a CODE or --all (one of them)", file=sys.stderr)
        return 2
    if args.all:
        width = max(len(r.kind) for r in RULES)
        for r in RULES:
            print(f"{r.code}  {r.kind:<{width}}  {r.severity:<7}  {r.summary}")
        return 0
    try:
        get_rule(args.code)
        print(rule_page(args.code), end="")
    except BroadcastError as e:
        print(f"bcast rule: {show(e)}", file=sys.stderr)
        return 2
    return 0


def _shapes_command(args: argparse.Namespace) -> int:
    from .check.command import use_colour

    shapes = [*args.shapes, *([args.to] if args.to is not None else [])]
    for s in shapes:
        if len(s) > MAX_SHAPE_CHARS or s.count(",") >= MAX_SHAPE_DIMS:
            what = f"{len(s):,} characters" if len(s) > MAX_SHAPE_CHARS else f"{s.count(',') + 1:,} dims"
            return _usage_error(
                args,
                f"the shape {brief(s, 80)} has {what}; a shape argument has at most "
                f"{MAX_SHAPE_DIMS} dims and {MAX_SHAPE_CHARS:,} characters",
            )
    refusal = _bad_argument(args)
    if refusal is not None:  # a usage error or a shape that cannot be read: exit 2, before anything else
        return _usage_error(args, refusal)
    mode = _mode_of(args)
    colour = use_colour(sys.stdout, args.color)
    drawn: object = None
    try:
        if args.to is not None:
            p = plan(
                args.shapes[0],
                args.to,
                mode,
                axes_mapping=args.axes_mapping,
                axis=args.axis,
                broadcast_axes=args.broadcast_axes,
            )
            out, cons, text = p.output_shape, p.constraints, p.explain(colour=colour)
            payload = _plan_json(p)
            drawn = p
        else:
            ep = elementwise_plan(*shapes, mode=mode, axis=args.axis)
            out, cons, text = ep.output_shape, ep.constraints, ep.explain(colour=colour)
            drawn = ep
            payload = {
                "form": "elementwise",
                "mode": mode,
                "axis": args.axis if mode in _AXIS_MODES else None,
                "shapes": [_shape_json(s) for s in ep.shapes],
                "output_shape": _shape_json(out),
                "constraints": [_constraint_json(c) for c in cons],
            }
    except TypeError as e:  # an argument the mode does not take, a count of shapes it does not take
        return _usage_error(args, e)
    except BroadcastError as e:  # shapes that clash
        if getattr(args, "svg", None) is not None:
            clash = e
            status = _draw(args, lambda: _clash_picture(clash, args, mode))
            if status:
                return status
        if args.json:
            print(json.dumps({"error": _error_json(e)}, indent=2))
        elif args.command == "explain":
            print(_explain_failure(e, args, mode, colour))
        else:
            print(f"bcast {args.command}: {show(e, 1800)}", file=sys.stderr)
        return PROBLEMS
    if getattr(args, "svg", None) is not None:
        from .svg import broadcast_svg

        status = _draw(args, lambda: broadcast_svg(drawn))
        if status:
            return status
    if args.json:
        print(json.dumps(payload, indent=2))
    elif args.command == "infer":
        print(out)
        for c in cons:
            print(c)
    else:
        print(text)
    return OK


#: the modes that take --axis (B into A at an axis), and those that exist only as data -> target
_AXIS_MODES = ("pdpd", "legacy")


def _mode_of(args: argparse.Namespace) -> str:
    from .rules import normalize_mode

    return normalize_mode(args.mode or "numpy")


def _usage_error(args: argparse.Namespace, why: object) -> int:
    """A usage error (a bad argument, mode or shape): one line on stderr (and the error as JSON with --json); 2."""
    message = f"bcast {args.command}: error: {show(why, 1800)}"
    if args.json:
        info = why.to_dict() if isinstance(why, BroadcastError) else {"message": str(why)}
        print(json.dumps({"error": {**info, "usage": True}}, indent=2))
    print(message, file=sys.stderr)
    return BAD_INPUT


def _draw(args: argparse.Namespace, picture: Any) -> int:
    try:
        _write_text(args.svg, picture())
    except (OSError, ValueError) as e:
        print(f"error: cannot write the picture to {show(args.svg, 300)}: {show(e, 600)}", file=sys.stderr)
        return BAD_INPUT
    return OK


def _bad_argument(args: argparse.Namespace) -> BroadcastError | TypeError | str | None:
    """Why the arguments cannot be used (a shape that cannot be read, a mode that is none of bcast's or
    none of this form's, an option of the other form); ``None`` when they are fine. Checked before anything runs."""
    from .dims import Shape
    from .rules import ELEMENTWISE_MODES, MODES, normalize_mode  # the rules own the mode names

    try:
        mode = normalize_mode(args.mode or "numpy")
    except (BroadcastError, TypeError) as e:
        return e
    if args.to is None:
        if mode not in ELEMENTWISE_MODES:
            return (
                f"mode {mode!r} broadcasts one shape to another: give it as DATA --to TARGET "
                f'(e.g. bcast {args.command} "[3,4]" --to "[3,5,6]" --mode {mode}); without --to the shapes '
                f"are elementwise operands A B..., whose modes are {', '.join(ELEMENTWISE_MODES)}"
            )
        for option, value in (("--axes-mapping", args.axes_mapping), ("--broadcast-axes", args.broadcast_axes)):
            if value is not None:
                owner = "explicit" if option == "--axes-mapping" else "axes and like"
                return f"{option} belongs to the data -> target form (DATA --to TARGET, mode {owner})"
    elif len(args.shapes) != 1:
        return (
            f"with --to, give one DATA shape (got {len(args.shapes)}): bcast {args.command} DATA --to TARGET; "
            f"without --to, the shapes are elementwise operands A B..."
        )
    if mode not in MODES:  # pragma: no cover - normalize_mode allows only these
        return f"unknown mode {brief(mode)}"
    for name, s in _named_shapes(args):
        if not s.strip():  # the parser reads "" as a scalar: a shell variable left unset would pass unnoticed
            return f'{name} is {"empty" if not s else "only whitespace"}: write "[]" for a scalar'
    try:
        for _, s in _named_shapes(args):
            Shape(s)
    except (BroadcastError, TypeError) as e:
        return e
    return None


def _named_shapes(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Each shape argument with the name its usage line gives it: ``DATA`` and ``--to TARGET``, or the
    elementwise operands counted from 1."""
    if args.to is not None:
        return [*(("DATA", s) for s in args.shapes), ("--to TARGET", args.to)]
    return [(f"shape argument {i} of {len(args.shapes)}", s) for i, s in enumerate(args.shapes, 1)]


def _shape_json(shape: Any) -> list[int | str] | None:
    """A shape as JSON: a list whose static dims are ints and the others strings (``None``: unknown rank)."""
    from .dims import Shape

    s = shape if isinstance(shape, Shape) else Shape(shape)
    if s.rank is None:
        return None
    return [_dim_json(d) for d in s]


def _dim_json(d: Any) -> int | str:
    if isinstance(d, int):
        return d
    if getattr(d, "is_static", False):
        return int(d.value)
    text = str(d)
    return int(text) if text.isdigit() else text


def _constraint_json(c: Any) -> dict[str, Any]:
    d: dict[str, Any] = c.to_dict()
    d["allowed"] = [_dim_json(x) for x in c.allowed]
    return d


def _plan_json(p: Any) -> dict[str, Any]:
    d: dict[str, Any] = p.to_dict()
    return {
        "form": "data-to-target",
        **d,
        "data_shape": _shape_json(p.data_shape),
        "target_shape": _shape_json(p.target_shape),
        "output_shape": _shape_json(p.output_shape),
        "constraints": [_constraint_json(c) for c in p.constraints],
    }


def _error_json(e: BroadcastError) -> dict[str, Any]:
    d = e.to_dict()
    shapes: list[list[int | str] | str | None] = []
    for s in d.get("shapes") or ():
        try:
            shapes.append(_shape_json(s))
        except (BroadcastError, TypeError, ValueError):
            shapes.append(str(s))
    d["shapes"] = shapes
    d["dims"] = [_dim_json(x) for x in d.get("dims") or ()]
    return d


def _write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path``; a FIFO nobody reads is an error at once (ENXIO), never a hang."""
    from .check.command import write_text

    write_text(path, text)


def _lined_up(args: argparse.Namespace, mode: str) -> tuple[list[Any], tuple[str, ...] | None]:
    """The shapes as the mode lines them up, (A, B) for pdpd and legacy, and the rows' labels."""
    from .dims import Shape

    if args.to is None:
        return [Shape(s) for s in args.shapes], None
    data, target = Shape(args.shapes[0]), Shape(args.to)
    if mode in _AXIS_MODES:
        return [target, data], None  # the data is B, the target A: placement lines up (A, B)
    return [data, target], ("data", "target")


def _clash_picture(e: BroadcastError, args: argparse.Namespace, mode: str) -> str:
    from .svg import clash_svg

    shapes, labels = _lined_up(args, mode)
    return clash_svg(
        e,
        shapes,
        mode,
        axes_mapping=args.axes_mapping,
        axis=args.axis,
        broadcast_axes=args.broadcast_axes,
        labels=labels,
    )


def _explain_failure(e: BroadcastError, args: argparse.Namespace, mode: str, colour: bool) -> str:
    """The shapes lined up as the mode places them, with the clash marked (falls back to the message)."""
    from .explain import explain_error

    try:
        shapes, labels = _lined_up(args, mode)
    except (BroadcastError, TypeError):
        return f"error: {e}"
    return explain_error(
        e,
        shapes,
        show(mode, 80),
        axes_mapping=args.axes_mapping,
        axis=args.axis,
        broadcast_axes=args.broadcast_axes,
        labels=labels,
        colour=colour,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
