"""The recurrent layers: LSTM, GRU and RNN (ONNX), one shape function for the three.

Each takes a sequence ``X`` (``[seq, batch, input]``, or ``[batch, seq, input]`` with ``layout=1``) and weights
for ``gates`` gates per direction (LSTM 4, GRU 3, RNN 1): ``W [dirs, gates*hidden, input]``, ``R [dirs,
gates*hidden, hidden]``, an optional bias ``B [dirs, 2*gates*hidden]``, per-sequence lengths ``[batch]``, initial
states ``[dirs, batch, hidden]`` (``[batch, dirs, hidden]`` with ``layout=1``) and, for an LSTM, peepholes ``P
[dirs, 3*hidden]``. It gives every step's state ``Y`` (``[seq, dirs, batch, hidden]``, or ``[batch, seq, dirs,
hidden]``) and the last states ``Y_h`` (and ``Y_c``), shaped as the initial ones. ``dirs`` is 2 for
``direction="bidirectional"``, else 1; ``hidden`` is the ``hidden_size`` attribute, else ``R``'s last dim.

Every operand is checked against the dims ``X`` and the attributes give it (a ``shape-mismatch`` where it
differs, for every size or for some), so a weight exported for another input size or a state for another batch
is found at the layer, and the outputs keep ``X``'s batch and sequence.
"""

from __future__ import annotations

from ..context import Ctx, ShapeError
from ..expr import Expr
from ..model import Node, Origin, Value
from ._base import agree, attr_int, dims_text, input_value, known, op_label, register

__all__ = ["operand_dims"]

#: the gates of each layer, per direction
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


@register("LSTM", "GRU", "RNN")
def _recurrent(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w, r = known(input_value(ins, 0)), known(input_value(ins, 1)), known(input_value(ins, 2))
    gates = _GATES[node.op]
    direction = str(node.attrs.get("direction", "forward"))  # the readers give a string attribute as str
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ShapeError(f"{op_label(node)}: direction {direction!r} is none of forward, reverse, bidirectional")
    dirs = Expr.const(2 if direction == "bidirectional" else 1)
    layout = attr_int(node, "layout", 0)
    if layout not in (0, 1):
        raise ShapeError(f"{op_label(node)}: layout {layout} is neither 0 nor 1", kind="invalid")
    hidden, ho = _hidden_size(node, r)
    n_out = len(node.outputs)
    if x.shape is None:
        return [Value(x.dtype, None) for _ in range(n_out)]
    if len(x.shape) != 3:
        raise ShapeError(f"{op_label(node)}: X is {dims_text(x.shape)}; it must be of rank 3", kind="invalid")
    seq, batch = (x.shape[0], x.shape[1]) if layout == 0 else (x.shape[1], x.shape[0])
    so, bo = (x.origin(0), x.origin(1)) if layout == 0 else (x.origin(1), x.origin(0))
    here = Origin(node.name, node.op)
    if hidden is None:
        hidden, ho = ctx.fresh(f"{node.name}_hidden"), here
    gh = gates * hidden
    state = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    state_o = [here, bo, ho] if layout == 0 else [bo, here, ho]
    expected: list[tuple[int, str, list[Expr]]] = [
        (1, "W", [dirs, gh, x.shape[2]]),
        (2, "R", [dirs, gh, hidden]),
        (3, "B", [dirs, 2 * gh]),
        (4, "sequence_lens", [batch]),
        (5, "initial_h", state),
    ]
    if node.op == "LSTM":
        expected += [(6, "initial_c", state), (7, "P", [dirs, 3 * hidden])]
    for k, what, want in expected:
        operand_dims(node, ctx, input_value(ins, k), what, want, x, w)
    y = [seq, dirs, batch, hidden] if layout == 0 else [batch, seq, dirs, hidden]
    y_o = [so, here, bo, ho] if layout == 0 else [bo, so, here, ho]
    outs = [Value(x.dtype, tuple(y), None, tuple(y_o))]
    outs += [Value(x.dtype, tuple(state), None, tuple(state_o)) for _ in range(n_out - 1)]
    return outs


def _hidden_size(node: Node, r: Value) -> tuple[Expr | None, Origin | None]:
    """The layer's hidden size and where it comes from: the attribute, else ``R``'s last dim."""
    if "hidden_size" in node.attrs:
        h = attr_int(node, "hidden_size", 0)
        if h <= 0:
            raise ShapeError(f"{op_label(node)}: hidden_size {h} must be positive", kind="invalid")
        return Expr.const(h), Origin(node.name, node.op)
    if r.shape is not None and len(r.shape) == 3:
        return r.shape[2], r.origin(2)
    return None, None


def operand_dims(node: Node, ctx: Ctx, v: Value | None, what: str, want: list[Expr], x: Value, w: Value) -> None:
    """``v`` (the operand ``what``) has the dims ``want`` the layer's sequence and attributes give it (ONNX's
    layers and the IR's ``LSTMSequence``, ``GRUSequence`` and ``RNNSequence`` alike)."""
    if v is None or v.shape is None:
        return
    if len(v.shape) != len(want):
        raise ShapeError(
            f"{op_label(node)}: {what} is {dims_text(v.shape)}; it must be {dims_text(want)}",
            kind="shape-mismatch",
        )
    for k, (got, need) in enumerate(zip(v.shape, want, strict=True)):
        # the input size is X's and W's alike: each is named as the other's origin
        other = x.origin(2) if what == "W" and k == 2 else None
        agree(
            node,
            ctx,
            got,
            v.origin(k),
            need,
            other,
            f"axis {k} of {what} {dims_text(v.shape)} (X {dims_text(x.shape)}, W {dims_text(w.shape)})",
            axis=k,
        )
