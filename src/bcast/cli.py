"""The ``bcast`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from .api import elementwise_plan, plan
from .errors import BroadcastError

__all__ = ["main"]

_EPILOG = """examples:
  bcast check model.onnx                       every broadcasting node of an ONNX model, and its problems
  bcast check model.xml --json                 the same for an OpenVINO IR (.xml + .bin), as JSON
  bcast check --sample                         the sample model shipped with bcast (it has a bug)
  bcast tour                                   every worked example of the spec texts
  bcast infer "[16,1,1]" "[1,16,50,50]"        numpy mode: -> [1,16,50,50]
  bcast infer "[N,1]" "[4,5]"                  prints the shape and: N in {1, 4}
  bcast explain "[512,512]" "[8,512,512,16]" --mode explicit --axes-mapping 1,2
  bcast explain "[1,4,5]" "[2,3,1,1]" --svg b.svg   elementwise operands, and a picture
"""

_CHECK_EPILOG = """examples:
  bcast check model.onnx            a report: nodes, symbolic dims, problems
  bcast check model.xml --json      OpenVINO IR (the .bin beside it), machine-readable
  bcast check model.onnx --quiet    one line per problem, nothing else
  bcast check --sample              the sample model shipped with bcast

exit status: 0 no problems, 1 problems found, 2 the model cannot be read
"""


def _ints(text: str) -> list[int]:
    text = text.strip().strip("[]()")
    if not text:
        return []
    try:
        return [int(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bcast",
        description="Tensor broadcasting as NumPy, ONNX, OpenVINO, nGraph and PaddlePaddle define it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    t = sub.add_parser(
        "tour",
        help="explain and evaluate every worked example of the spec texts",
        epilog="examples:\n  bcast tour           each example: its plan, its explanation, its values\n"
        "  bcast tour --brief   one line per example (mode, shapes, whether it agrees with its text)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("--brief", action="store_true", help="one line per example")
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
    from .bench import add_arguments

    b = sub.add_parser(
        "bench",
        help="time the engine against NumPy, PyTorch, ONNX Runtime and OpenVINO",
        epilog="examples:\n  bcast bench --quick                        a smoke test (small sizes)\n"
        "  bcast bench --json r.json --plot r.svg     the full table, its data and a throughput plot\n"
        "  bcast bench --filter materialize           only the materialise cases",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(b)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. `bcast check --json | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    if args.command == "tour":
        from .tour import tour

        return 1 if tour(brief=args.brief) else 0
    if args.command == "check":
        return _check_command(args)
    if args.command == "bench":
        from .bench import main_with

        return main_with(args)
    return _shapes_command(args)


def _check_command(args: argparse.Namespace) -> int:
    from .check import sample_model_path
    from .check.command import run_check

    if args.sample == (args.model is not None):
        print("bcast check: give a MODEL path or --sample (one of them)", file=sys.stderr)
        return 2
    path = sample_model_path() if args.sample else args.model
    return run_check(path, as_json=args.json, quiet=args.quiet, colour=args.color)


def _shapes_command(args: argparse.Namespace) -> int:
    from .check.command import use_colour

    shapes = args.shapes
    mode = args.mode or "numpy"
    colour = use_colour(sys.stdout, args.color)
    drawn: object = None
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
            print(f"error: {e}", file=sys.stderr)
        return 1
    if getattr(args, "svg", None):
        from .svg import broadcast_svg

        try:
            with open(args.svg, "w", encoding="utf-8") as f:
                f.write(broadcast_svg(drawn))
        except (OSError, ValueError) as e:
            print(f"error: cannot write the picture to {args.svg}: {e}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(payload, indent=2))
    elif args.command == "infer":
        print(out)
        for c in cons:
            print(c)
    else:
        print(text)
    return 0


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
        mode,
        axes_mapping=args.axes_mapping,
        axis=args.axis,
        broadcast_axes=args.broadcast_axes,
        labels=labels,
        colour=colour,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
