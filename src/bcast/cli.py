"""The ``bcast`` command."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .api import elementwise_plan, plan
from .errors import BroadcastError

__all__ = ["main"]

_EPILOG = """examples:
  bcast tour                                   every worked example of the spec texts
  bcast infer "[16,1,1]" "[1,16,50,50]"        numpy mode: -> [1,16,50,50]
  bcast infer "[N,1]" "[4,5]"                  prints the shape and: N in {1, 4}
  bcast explain "[512,512]" "[8,512,512,16]" --mode explicit --axes-mapping 1,2
  bcast explain "[1,4,5]" "[2,3,1,1]"          elementwise (multidirectional) operands
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
    t = sub.add_parser("tour", help="explain and evaluate every worked example of the spec texts")
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
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    if args.command == "tour":
        from .tour import tour

        return 1 if tour(brief=args.brief) else 0
    return _shapes_command(args)


def _shapes_command(args: argparse.Namespace) -> int:
    shapes = args.shapes
    mode = args.mode or "numpy"
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
            out, cons, text = p.output_shape, p.constraints, p.explain()
            payload = p.to_dict()
        else:
            ep = elementwise_plan(*shapes, mode=mode, axis=args.axis)
            out, cons, text = ep.output_shape, ep.constraints, ep.explain()
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
        else:
            print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(payload, indent=2))
    elif args.command == "infer":
        print(out)
        for c in cons:
            print(c)
    else:
        print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
