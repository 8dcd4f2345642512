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

_EPILOG = """examples:
  bcast check model.onnx                       every broadcasting node of an ONNX model, and its problems
  bcast check model.xml --json                 the same for an OpenVINO IR (.xml + .bin), as JSON
  bcast check --sample                         the sample model shipped with bcast (it has a bug)
  bcast infer "[16,1,1]" "[1,16,50,50]"        numpy mode: -> [1,16,50,50]
  bcast infer "[N,1]" "[4,5]"                  prints the shape and: N in {1, 4}
  bcast explain "[512,512]" "[8,512,512,16]" --mode explicit --axes-mapping 1,2
  bcast explain "[1,4,5]" "[2,3,1,1]" --svg b.svg   elementwise operands, and a picture

exit status: 0 success (a clean model, shapes that broadcast), 1 problems found (a model's
problems, shapes that clash), 2 bad input (a model that cannot be read or is no valid graph,
a bad argument), 3 an internal error (a bug of bcast: rerun with --debug and report it)

limits: a SHAPE argument has at most 64 dims and 4096 characters; see `bcast check --help`
for the limits on models
"""

_CHECK_EPILOG = """examples:
  bcast check model.onnx            a report: nodes, symbolic dims, problems
  bcast check model.xml --json      OpenVINO IR (the .bin beside it), machine-readable
  bcast check model.onnx --quiet    one line per problem, nothing else
  bcast check --sample              the sample model shipped with bcast

exit status: 0 no problems, 1 problems found, 2 the model cannot be read (missing, not a regular
file, too large, truncated, not a model, not a valid graph), 3 an internal error (a bug of bcast:
rerun with --debug for the traceback, and report it)

limits: only regular files are read (no FIFO, device or directory); an .onnx file of at most
2 GiB (protobuf's limit; external data files are never read); an IR .xml of at most 128 MiB (its
.bin is read only for the few small constants that give shapes); ranks and constant shapes of at
most 64 values; TensorIterator/Loop/If bodies nested at most 32 deep
"""


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
    c = sub.add_parser(
        "check",
        help="check every broadcasting node of an ONNX model or OpenVINO IR",
        epilog=_CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("model", nargs="?", metavar="MODEL", help="an .onnx file, or an OpenVINO IR .xml (with its .bin)")
    c.add_argument("--sample", action="store_true", help="check the sample model shipped with bcast")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("--quiet", action="store_true", help="only the problems, one per line; no progress bar")
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the report")
    _debug_flag(c)
    for name, helptext in (
        ("infer", "print the output shape (and constraints)"),
        ("explain", "show how the shapes line up and what is replicated"),
    ):
        p = sub.add_parser(name, help=helptext, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("shapes", nargs="+", metavar="SHAPE", help='shapes such as "[2,?,1..8,N]"')
        p.add_argument("--mode", default=None, help="numpy (default), bidirectional, explicit, pdpd, axes, like, none")
        p.add_argument("--axes-mapping", type=_ints, default=None, help="explicit mode: e.g. 1,2")
        p.add_argument("--axis", type=int, default=-1, help="pdpd mode: start axis of B in A")
        p.add_argument("--broadcast-axes", type=_ints, default=None, help="axes / like mode: e.g. 0,2")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the table")
        if name == "explain":
            p.add_argument("--svg", metavar="FILE", default=None, help="also draw the broadcast as an SVG picture")
        _debug_flag(p)
    return ap


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


#: former subcommands, now development tools of the repository (not installed): how to run each
_MOVED = {
    "bench": "`make bench` (or `python -m benchmarks.bench`)",
    "tour": "`make tour` (or `python -m tools.tour`)",
}


def _main(argv: Sequence[str] | None = None) -> int:
    command = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    if command in _MOVED:
        sys.stderr.write(f"bcast {command} is a development tool: run {_MOVED[command]} in a clone of the repository\n")
        return BAD_INPUT
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    if args.command == "check":
        return _check_command(args)
    return _shapes_command(args)


def _check_command(args: argparse.Namespace) -> int:
    from .check import sample_model_path
    from .check.command import run_check

    if args.sample == (args.model is not None):
        print("bcast check: give a MODEL path or --sample (one of them)", file=sys.stderr)
        return 2
    path = sample_model_path() if args.sample else args.model
    return run_check(path, as_json=args.json, quiet=args.quiet, colour=args.color, debug=args.debug)


def _shapes_command(args: argparse.Namespace) -> int:
    from .check.command import use_colour

    shapes = args.shapes
    for s in shapes:
        if len(s) > MAX_SHAPE_CHARS or s.count(",") >= MAX_SHAPE_DIMS:
            what = f"{len(s):,} characters" if len(s) > MAX_SHAPE_CHARS else f"{s.count(',') + 1:,} dims"
            print(
                f"bcast {args.command}: error: the shape {brief(s, 80)} has {what}; a shape argument has at most "
                f"{MAX_SHAPE_DIMS} dims and {MAX_SHAPE_CHARS:,} characters",
                file=sys.stderr,
            )
            return BAD_INPUT
    mode = args.mode or "numpy"
    colour = use_colour(sys.stdout, args.color)
    drawn: object = None
    refusal = _bad_argument(shapes, mode)
    if refusal is not None:  # an argument that is no shape or no mode: bad input, not a clash
        if args.json:
            print(
                json.dumps(
                    {"error": refusal.to_dict() if isinstance(refusal, BroadcastError) else {"message": str(refusal)}},
                    indent=2,
                )
            )
        print(f"bcast {args.command}: error: {show(refusal, 1800)}", file=sys.stderr)
        return BAD_INPUT
    try:
        if len(shapes) == 2 and (args.mode is not None or args.axes_mapping or args.broadcast_axes):
            p = plan(
                shapes[0],
                shapes[1],
                mode,
                axes_mapping=args.axes_mapping,
                axis=args.axis,
                broadcast_axes=args.broadcast_axes,
            )
            out, cons, text = p.output_shape, p.constraints, p.explain(colour=colour)
            payload = p.to_dict()
            drawn = p
        else:
            ep = elementwise_plan(*shapes, mode=mode, axis=args.axis)
            out, cons, text = ep.output_shape, ep.constraints, ep.explain(colour=colour)
            drawn = ep
            payload = {
                "mode": mode,
                "shapes": shapes,
                "output_shape": str(out),
                "constraints": cons.to_list(),
            }
    except (BroadcastError, TypeError) as e:
        if args.json:
            info = e.to_dict() if isinstance(e, BroadcastError) else {"message": str(e)}
            print(json.dumps({"error": info}, indent=2))
        elif args.command == "explain" and isinstance(e, BroadcastError):
            print(_explain_failure(e, args, mode, colour))
        else:
            print(f"error: {show(e, 1800)}", file=sys.stderr)
        return PROBLEMS
    if getattr(args, "svg", None) is not None:
        from .svg import broadcast_svg

        try:
            _write_text(args.svg, broadcast_svg(drawn))
        except (OSError, ValueError) as e:
            print(f"error: cannot write the picture to {show(args.svg, 300)}: {show(e, 600)}", file=sys.stderr)
            return BAD_INPUT
    if args.json:
        print(json.dumps(payload, indent=2))
    elif args.command == "infer":
        print(out)
        for c in cons:
            print(c)
    else:
        print(text)
    return 0


def _write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path``; a FIFO nobody reads is an error at once (ENXIO), never a hang."""
    import errno
    import fcntl

    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO that no process reads") from None
        raise
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # a reader may be slow
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _bad_argument(shapes: list[str], mode: str) -> BroadcastError | TypeError | None:
    """Why a shape argument cannot be read, or the mode is none of bcast's; ``None`` when both are fine."""
    from .dims import Shape
    from .rules import normalize_mode  # the rules own the mode names

    try:
        for s in shapes:
            Shape(s)
        normalize_mode(mode)
    except (BroadcastError, TypeError) as e:
        return e
    return None


def _explain_failure(e: BroadcastError, args: argparse.Namespace, mode: str, colour: bool) -> str:
    """The shapes lined up as the mode places them, with the clash marked (falls back to the message)."""
    from .dims import Shape
    from .explain import explain_error

    try:
        shapes = [Shape(s) for s in args.shapes]
    except (BroadcastError, TypeError):
        return f"error: {e}"
    two_as_plan = len(shapes) == 2 and (args.mode is not None or args.axes_mapping or args.broadcast_axes)
    labels = ("data", "target") if two_as_plan and mode not in ("pdpd", "legacy") else None
    if two_as_plan and mode in ("pdpd", "legacy"):
        shapes.reverse()  # the plan form takes B (the data) first; explain_error lines up (A, B)
    return explain_error(
        e,
        shapes,
        show(mode, 80),  # printed in the heading: a mode the rules refused may hold anything
        axes_mapping=args.axes_mapping,
        axis=args.axis,
        broadcast_axes=args.broadcast_axes,
        labels=labels,
        colour=colour,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
