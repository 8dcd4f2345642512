"""Inject realistic broadcasting bugs into exported ONNX graphs, with the onnx Python API.

Why: a broadcasting checker is only as good as the bugs it is measured on. These are the bugs that
real export pipelines produce (a bias reshaped to a column, a LayerNorm of the wrong width, a mask
unsqueezed on the wrong axis, heads split wrongly, a position table sliced to the traced length,
a batch folded into a constant, an Expand target read from the wrong axis, a Concat on the wrong
axis, a stride changed on one residual branch...), each made by editing a clean export.

Every bug class finds its candidate *sites* in a graph (so the same class lands on different
architectures and on both exporters' very different graphs), then edits one site. Nodes and
initializers that the edit inserts are named ``injected/<bug>/...``; every node the exporter wrote
keeps its name. A bug is kept only if :mod:`benchmarks.corpus.prove` shows that onnxruntime
rejects it (see there): the classes only *propose* sizes where the runtime should fail (and, for
latent bugs, sizes where it should still run).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .models import ModelSpec

__all__ = ["BUGS", "BugClass", "Graph", "Injection", "candidates", "get_bug"]

INT64_MAX = np.iinfo(np.int64).max


@dataclass
class Injection:
    """One bug injected at one site: what was done and where the runtime should fail."""

    bug: str
    description: str
    edited: list[str]
    expect_nodes: list[str]
    latent: bool
    fails: dict[str, int]
    passes: dict[str, int] | None = None
    model: onnx.ModelProto | None = field(default=None, repr=False)


class Graph:
    """A thin editing view over an ONNX graph: producers, consumers, constant values, new names.

    Why: both exporters spell constants differently (initializers for dynamo, ``Constant`` nodes
    for TorchScript), and share tensors differently (dynamo reuses one shape tensor for every
    Reshape of a model); every bug class needs the same few queries and private edits.
    """

    def __init__(self, model: onnx.ModelProto, bug: str) -> None:
        self.model = model
        self.g = model.graph
        self.bug = bug
        self._n = 0
        self.edited: list[str] = []

    # ---- queries ----------------------------------------------------------------------------
    @property
    def nodes(self) -> list[onnx.NodeProto]:
        return list(self.g.node)

    def producer(self, tensor: str) -> onnx.NodeProto | None:
        for n in self.g.node:
            if tensor in n.output:
                return n
        return None

    def consumers(self, tensor: str) -> list[onnx.NodeProto]:
        return [n for n in self.g.node if tensor in n.input]

    def initializer(self, tensor: str) -> onnx.TensorProto | None:
        for t in self.g.initializer:
            if t.name == tensor:
                return t
        return None

    def const(self, tensor: str) -> np.ndarray | None:
        """The value of ``tensor`` if it is an initializer or a ``Constant`` node's output."""
        t = self.initializer(tensor)
        if t is not None:
            return numpy_helper.to_array(t)
        p = self.producer(tensor)
        if p is not None and p.op_type == "Constant":
            for a in p.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
                if a.name in {"value_int", "value_ints", "value_float", "value_floats"}:
                    return np.array(helper.get_attribute_value(a))
        return None

    def is_const(self, tensor: str) -> bool:
        return self.const(tensor) is not None

    def ancestors(self, tensor: str) -> set[str]:
        """Every tensor (and graph input) that ``tensor`` is computed from."""
        producers = {o: n for n in self.g.node for o in n.output}
        seen: set[str] = set()
        stack = [tensor]
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            n = producers.get(t)
            if n is not None:
                stack.extend(i for i in n.input if i)
        return seen

    def up(self, tensor: str, through: set[str], depth: int = 12) -> Iterator[onnx.NodeProto]:
        """Walk up from ``tensor`` along the first non-constant input of nodes whose op is in ``through``."""
        for _ in range(depth):
            n = self.producer(tensor)
            if n is None:
                return
            yield n
            if n.op_type not in through:
                return
            if n.op_type == "Where" and not self.is_const(n.input[2]):
                tensor = n.input[2]  # Where(cond, fill, value): the value flows on
                continue
            ins = [i for i in n.input if i and not self.is_const(i)]
            if not ins:
                return
            tensor = ins[0]

    def attr(self, node: onnx.NodeProto, name: str, default: Any = None) -> Any:
        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default

    def set_attr(self, node: onnx.NodeProto, name: str, value: Any) -> None:
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(name, value))

    # ---- edits ------------------------------------------------------------------------------
    def name(self, what: str) -> str:
        self._n += 1
        return f"injected/{self.bug}/{what}_{self._n}"

    def new_const(self, what: str, value: np.ndarray) -> str:
        """Add an initializer holding ``value``; return its (new, unique) name."""
        name = self.name(what)
        self.g.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        self.edited.append(name)
        return name

    def set_input(self, node: onnx.NodeProto, index: int, tensor: str) -> None:
        node.input[index] = tensor
        if node.name not in self.edited:
            self.edited.append(node.name)

    def insert(self, before: onnx.NodeProto, op: str, inputs: list[str], what: str, **attrs: Any) -> str:
        """Insert a new named node just before ``before`` (the order stays topological); return its output."""
        name = self.name(what)
        out = name + "_output"
        node = helper.make_node(op, inputs, [out], name=name, **attrs)
        idx = list(self.g.node).index(before)
        self.g.node.insert(idx, node)
        self.edited.append(name)
        return out

    def clone(self, node: onnx.NodeProto, before: onnx.NodeProto, what: str) -> onnx.NodeProto:
        """A private copy of a (shared) node, inserted before ``before``, with a new output."""
        new = copy.deepcopy(node)
        new.name = self.name(what)
        new.output[0] = new.name + "_output"
        idx = list(self.g.node).index(before)
        self.g.node.insert(idx, new)
        self.edited.append(new.name)
        return self.g.node[idx]  # protobuf inserts a copy: return the node that is in the graph

    def drop_stale_value_info(self) -> None:
        """Forget the declared shapes of every tensor downstream of the edit.

        Why: graph-surgery tools leave or clear ``value_info``; a stale declared shape makes
        onnxruntime fail on its buffer planner instead of at the broadcasting node itself.
        """
        touched = set(self.edited)
        start: set[str] = set()
        for n in self.g.node:
            if n.name in touched or any(i in touched for i in n.input):
                start.update(n.output)
        consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.g.node:
            for i in n.input:
                consumers.setdefault(i, []).append(n)
        stale = set()
        stack = list(start)
        while stack:
            t = stack.pop()
            if t in stale:
                continue
            stale.add(t)
            for c in consumers.get(t, []):
                stack.extend(c.output)
        keep = [v for v in self.g.value_info if v.name not in stale]
        del self.g.value_info[:]
        self.g.value_info.extend(keep)

    def shape_elements(self, tensor: str) -> tuple[onnx.NodeProto | None, list[int | None]]:
        """A Reshape/Expand target: its Concat (if any) and its elements (``None`` where dynamic)."""
        value = self.const(tensor)
        if value is not None:
            return None, [int(v) for v in value.reshape(-1)]
        p = self.producer(tensor)
        if p is None or p.op_type != "Concat":
            return None, []
        elements: list[int | None] = []
        for i in p.input:
            v = self.const(i)
            if v is None:
                elements.append(None)
            else:
                elements.extend(int(x) for x in v.reshape(-1))
        return p, elements


def _sizes(spec: ModelSpec, **over: int) -> dict[str, int]:
    return {**spec.sizes, **{k: v for k, v in over.items() if k in spec.sizes}}


# ---------------------------------------------------------------------------------------------
# bug classes: each has sites(g, spec) -> list of site keys and apply(g, spec, site) -> Injection
# ---------------------------------------------------------------------------------------------


class BugClass:
    """One kind of bug: where it can go in a graph, and how to put it there.

    ``latent``: the bug is meant to fail only for some sizes (``passes`` names sizes where it runs);
    ``must_be_latent``: a candidate that fails everywhere is discarded (another class covers it);
    ``tries``: how many sites to try before giving up on this class for a model.
    """

    name = ""
    variant = ""
    latent = False
    must_be_latent = False
    tries = 3
    ordered = False  # try sites in the order sites() gives (else middle first)
    #: ops at which the runtime must fail for the bug to count (None: any broadcasting op)
    fail_ops: frozenset[str] | None = None

    @property
    def key(self) -> str:
        """The class name plus its variant: unique among :data:`BUGS`, used in file names."""
        return f"{self.name}-{self.variant}" if self.variant else self.name

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        raise NotImplementedError

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        raise NotImplementedError

    def fails(self, spec: ModelSpec) -> dict[str, int]:
        # 7 is not a head count, a head size or a hidden size: no accidental match hides the clash
        return _sizes(spec, batch=2, seq=7)

    def result(self, g: Graph, spec: ModelSpec, description: str, expect: list[str], **kw: Any) -> Injection:
        fails = kw.pop("fails", None) or self.fails(spec)
        return Injection(
            self.name,
            description,
            list(dict.fromkeys(g.edited)),
            list(dict.fromkeys([*g.edited, *expect])),
            kw.pop("latent", self.latent),
            fails,
            kw.pop("passes", None),
        )


def _bias_adds(g: Graph, op: str = "Add") -> list[tuple[str, int]]:
    """(node, input index) of each ``op`` with a rank-1 constant of length > 1 and a computed operand."""
    out = []
    for n in g.nodes:
        if n.op_type != op or len(n.input) != 2:
            continue
        for i, t in enumerate(n.input):
            v = g.const(t)
            other = n.input[1 - i]
            if v is not None and v.ndim == 1 and v.shape[0] > 1 and not g.is_const(other):
                out.append((n.name, i))
    return out


def _node(g: Graph, name: str) -> onnx.NodeProto:
    for n in g.g.node:
        if n.name == name:
            return n
    raise KeyError(name)


class TransposedBias(BugClass):
    """A ``[N]`` bias replaced by an ``[N, 1]`` constant: it meets ``[..., S, N]`` on the wrong axis."""

    name = "transposed-bias"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        return _bias_adds(g)

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site[0])
        bias = g.const(node.input[site[1]])
        assert bias is not None
        new = g.new_const("bias_column", bias.reshape(-1, 1))
        g.set_input(node, site[1], new)
        return self.result(
            g, spec, f"bias of {node.name} ([{bias.shape[0]}]) stored as [{bias.shape[0]}, 1]", [node.name]
        )


class ReshapedBias(BugClass):
    """A ``[N]`` bias passed through an inserted Reshape to ``[N, 1]`` before it is added."""

    name = "reshaped-bias"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        return _bias_adds(g)

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site[0])
        bias = node.input[site[1]]
        n = g.const(bias)
        assert n is not None
        shape = g.new_const("shape", np.array([-1, 1], dtype=np.int64))
        out = g.insert(node, "Reshape", [bias, shape], "Reshape")
        g.set_input(node, site[1], out)
        return self.result(g, spec, f"bias {bias} of {node.name} reshaped to [{n.shape[0]}, 1]", [node.name])


class NormWrongLength(BugClass):
    """A LayerNorm (or RMSNorm) scale or bias shorter than the normalised axis."""

    name = "layernorm-wrong-length"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out: list[Any] = []
        for n in g.nodes:
            if n.op_type == "LayerNormalization":
                out.extend((n.name, i) for i in (1, 2) if len(n.input) > i and g.is_const(n.input[i]))
            elif n.op_type == "Mul":
                for i, t in enumerate(n.input):
                    v = g.const(t)
                    if v is not None and v.ndim == 1 and v.shape[0] > 1 and "norm" in t.lower():
                        out.append((n.name, i))
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site[0])
        v = g.const(node.input[site[1]])
        assert v is not None
        short = v[: v.shape[0] * 3 // 4]
        new = g.new_const("norm_param", short)
        g.set_input(node, site[1], new)
        what = "scale" if site[1] == 1 or node.op_type == "Mul" else "bias"
        return self.result(
            g,
            spec,
            f"{what} of {node.name} has {short.shape[0]} values for a normalised axis of {v.shape[0]}",
            [node.name],
        )


def _score_adds(g: Graph) -> list[tuple[str, int]]:
    """(Add node, mask input index) of each attention-score Add whose other operand comes from the mask."""
    out = []
    for n in g.nodes:
        if n.op_type != "Softmax":
            continue
        p = g.producer(n.input[0])
        if p is None or p.op_type != "Add":
            continue
        for i, t in enumerate(p.input):
            if "attention_mask" in g.ancestors(t) and "attention_mask" not in g.ancestors(p.input[1 - i]):
                out.append((p.name, i))
    return out


class MaskWrongAxis(BugClass):
    """The extended attention mask built from ``attention_mask`` [B, S] with Unsqueeze on the wrong axes.

    ``axes=[2, 3]`` gives [B, S, 1, 1], meeting the scores [B, H, S, S] with S against H;
    ``axes=[0, 1]`` gives [1, 1, B, S]: B against the query length (runs only for batch 1).
    """

    name = "mask-wrong-axis"

    def __init__(self, axes: tuple[int, int] = (2, 3)) -> None:
        self.axes = axes
        self.latent = axes == (0, 1)
        self.variant = "batch" if self.latent else ""

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        if "attention_mask" not in spec.inputs:
            return []
        adds = _score_adds(g)
        masks = list(dict.fromkeys(_node(g, a).input[i] for a, i in adds))
        return masks

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        users = [
            (n, list(n.input).index(site))
            for n in g.nodes
            if site in n.input and (n.name, list(n.input).index(site)) in _score_adds(g)
        ]
        first = users[0][0]
        cast = g.insert(first, "Cast", ["attention_mask"], "Cast", to=onnx.TensorProto.FLOAT)
        one = g.new_const("one", np.array(1.0, dtype=np.float32))
        inv = g.insert(first, "Sub", [one, cast], "Sub")
        big = g.new_const("min", np.array(-1e4, dtype=np.float32))
        add = g.insert(first, "Mul", [inv, big], "Mul")
        axes = g.new_const("axes", np.array(self.axes, dtype=np.int64))
        mask = g.insert(first, "Unsqueeze", [add, axes], "Unsqueeze")
        for n, i in users:
            g.set_input(n, i, mask)
        shape = "[1, 1, B, S]" if self.axes == (0, 1) else "[B, S, 1, 1]"
        if self.latent:
            return self.result(
                g,
                spec,
                f"extended attention mask unsqueezed on axes {list(self.axes)}: {shape} meets the scores [B, H, S, S]",
                [n.name for n, _ in users],
                fails=_sizes(spec, batch=2, seq=7),
                passes=_sizes(spec, batch=1, seq=7),
            )
        return self.result(
            g,
            spec,
            f"extended attention mask unsqueezed on axes {list(self.axes)}: {shape} meets the scores [B, H, S, S]",
            [n.name for n, _ in users],
        )


def _head_reshapes(g: Graph) -> list[str]:
    """Reshapes that split heads: [B, S, N] -> [B, S, H|-1, D], then Transpose to [B, H, S, D]."""
    out = []
    for n in g.nodes:
        if n.op_type != "Reshape":
            continue
        _, el = g.shape_elements(n.input[1])
        if len(el) != 4 or el[3] is None or el[3] <= 1 or el[0] is not None:
            continue
        if any(c.op_type == "Transpose" for c in g.consumers(n.output[0])):
            out.append(n.name)
    return out


def _private_shape(g: Graph, reshape: onnx.NodeProto, values: list[int | None], what: str) -> None:
    """Give ``reshape`` a target with ``values`` (``None`` keeps the dynamic element of its Concat)."""
    concat, el = g.shape_elements(reshape.input[1])
    if concat is None or all(v is not None for v in values):
        assert all(v is not None for v in values)
        g.set_input(reshape, 1, g.new_const(what, np.array(values, dtype=np.int64)))
        return
    # keep the dynamic inputs of the Concat (one per element, in order), replace the constant ones
    dynamic = [i for i in concat.input if not g.is_const(i)]
    inputs = []
    k = 0
    for v, old in zip(values, el, strict=True):
        if v is None:
            assert old is None
            inputs.append(dynamic[k])
            k += 1
        else:
            if old is None:
                k += 1
            inputs.append(g.new_const(what, np.array([v], dtype=np.int64)))
    shared = len(g.consumers(concat.output[0])) > 1
    target = g.clone(concat, reshape, "Concat") if shared else concat
    del target.input[:]
    target.input.extend(inputs)
    if not shared and concat.name not in g.edited:
        g.edited.append(concat.name)
    g.set_input(reshape, 1, target.output[0])


class WrongHeadSplit(BugClass):
    """The Reshape that splits heads uses head_dim 2*D (and H/2 heads): Q then clashes with K^T."""

    name = "reshape-wrong-heads"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        return _head_reshapes(g)

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site)
        _, el = g.shape_elements(node.input[1])
        d = el[3]
        assert d is not None
        heads = el[2]
        new: list[int | None] = [None, el[1], -1 if heads in (-1, None) else max(heads // 2, 1), 2 * d]
        if el[1] is not None and el[1] != 0:
            return None
        _private_shape(g, node, new, "head_shape")
        return self.result(g, spec, f"{node.name} splits heads with head_dim {2 * d} instead of {d}", [node.name])


def _score_matmuls(g: Graph) -> list[str]:
    """Q @ K^T MatMuls: both operands computed, the result (scaled, masked) feeds a Softmax."""
    out = []
    for n in g.nodes:
        if n.op_type != "Softmax":
            continue
        for p in g.up(n.input[0], {"Add", "Mul", "Div", "Where", "Cast"}):
            if p.op_type == "MatMul" and not any(g.is_const(i) for i in p.input):
                out.append(p.name)
                break
    return out


class MatMulBatchClash(BugClass):
    """K reshaped into the wrong number of heads (H/2, or 2H when H is 2) with the length adjusted by
    ``-1``: Q is [B, H, S, D], K^T is [B, H', D, S'], and the batch dims of Q @ K^T clash (H vs H')."""

    name = "matmul-batch-clash"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for mm in _score_matmuls(g):
            k = _node(g, mm).input[1]
            for p in g.up(k, {"Transpose"}, depth=3):
                if p.op_type == "Reshape":
                    _, el = g.shape_elements(p.input[1])
                    if len(el) == 4 and el[3] is not None:
                        out.append((mm, p.name))
                    break
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        mm, rs = site
        node = _node(g, rs)
        _, el = g.shape_elements(node.input[1])
        d = el[3]
        assert d is not None
        heads = spec.heads
        # H/2 heads (the length doubles) or, from 2 heads (where 1 would broadcast), 4 (the length halves)
        wrong = heads // 2 if heads >= 4 else heads * 2
        if el[0] is not None:
            return None
        if el[2] in (-1, heads, None) and (el[1] is None or el[1] == 0):  # [B, S, H, D] before the transpose
            new: list[int | None] = [None, -1, wrong, d]
        elif el[1] in (-1, heads) and el[2] is None:  # [B, H, S, D] (repeat_kv)
            new = [None, wrong, -1, d]
        else:
            return None
        _private_shape(g, node, new, "kv_shape")
        return self.result(
            g,
            spec,
            f"K reshaped by {node.name} into {wrong} heads instead of {heads} (length by -1): "
            f"the batch dims of {mm} (Q @ K^T) clash, {heads} against {wrong}",
            [mm, node.name],
            # 2H heads halve the length: an even length keeps the Reshape itself valid
            fails=_sizes(spec, batch=2, seq=8 if wrong > heads else 7),
        )


class FixedPositionLength(BugClass):
    """Position ids sliced (or ranged) to the traced length 8 instead of the input's: works only for seq 8."""

    name = "fixed-position-length"
    latent = True
    must_be_latent = True
    tries = 8
    ordered = True  # the position-ids Slice first, then the Ranges

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        if "seq" not in spec.sizes:
            return []
        out: list[Any] = []
        ranges: list[Any] = []
        for n in g.nodes:
            if n.op_type == "Slice" and len(n.input) >= 3:
                data = g.const(n.input[0])
                if (
                    data is not None
                    and data.ndim == 2
                    and data.shape[0] == 1
                    and data.shape[1] >= 16
                    and data.dtype == np.int64
                    and not g.is_const(n.input[2])
                ):  # a position-ids buffer [1, max_positions]
                    out.append((n.name, 2))
            if n.op_type == "Range" and not g.is_const(n.input[1]):
                ranges.append((n.name, 1))  # position ids (or a mask's index): prove keeps the latent ones
        return out + ranges

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site[0])
        seq = spec.sizes["seq"]
        old = g.producer(node.input[site[1]])
        rank0 = node.op_type == "Range"
        value = np.array(seq, dtype=np.int64) if rank0 else np.array([seq], dtype=np.int64)
        src = g.const(node.input[0]) if rank0 else None
        if src is not None:
            value = value.astype(src.dtype)
        g.set_input(node, site[1], g.new_const("traced_length", value))
        return self.result(
            g,
            spec,
            f"{node.name} ends at the traced sequence length {seq} (was {old.name if old else node.input[site[1]]})",
            [node.name],
            fails=_sizes(spec, batch=2, seq=7),
            passes=_sizes(spec, batch=2, seq=seq),
        )


def _merge_reshapes(g: Graph) -> list[str]:
    """Reshapes that merge heads back: Transpose [B, H, S, D] -> [B, S, H, D] -> Reshape [B, S, N]."""
    out = []
    for n in g.nodes:
        if n.op_type != "Reshape":
            continue
        p = g.producer(n.input[0])
        if p is None or p.op_type != "Transpose" or list(g.attr(p, "perm", [])) != [0, 2, 1, 3]:
            continue
        _, el = g.shape_elements(n.input[1])
        if len(el) == 3 and el[0] is None:
            out.append(n.name)
    return out


class BatchFoldedReshape(BugClass):
    """The head-merging Reshape target folded to [1, -1, N] (traced at batch 1): the residual Add
    then meets [1, B*S, N] against [B, S, N]. Runs only for batch 1."""

    name = "batch-one-constant"
    latent = True
    must_be_latent = True

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        return _merge_reshapes(g)

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site)
        g.set_input(node, 1, g.new_const("folded_shape", np.array([1, -1, spec.hidden], dtype=np.int64)))
        return self.result(
            g,
            spec,
            f"{node.name} target folded to the constant [1, -1, {spec.hidden}] (batch 1 at trace time)",
            [node.name],
            fails=_sizes(spec, batch=2, seq=7),
            passes=_sizes(spec, batch=1, seq=7),
        )


class ExpandWrongAxis(BugClass):
    """An Expand target built from Shape/Gather/Concat whose batch element reads the sequence axis."""

    name = "expand-wrong-axis"
    latent = True

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for n in g.nodes:
            if n.op_type != "Expand":
                continue
            concat = None
            for p in g.up(n.input[1], {"Where", "Reshape", "Cast"}, depth=4):
                if p.op_type == "Concat":
                    concat = p
                    break
            if concat is None or len(concat.input) < 2:
                continue
            axis0 = self._axis_source(g, concat.input[0])
            axis1 = self._axis_source(g, concat.input[1])
            if axis0 is not None and axis1 is not None and axis0[1] == 0 and axis1[1] == 1:
                out.append((n.name, concat.name))
        return out

    @staticmethod
    def _axis_source(g: Graph, tensor: str) -> tuple[onnx.NodeProto, int] | None:
        """The Gather (of a Shape) or sliced Shape that gives this Concat element, and its axis."""
        for p in g.up(tensor, {"Unsqueeze", "Cast", "Squeeze"}, depth=4):
            if p.op_type == "Gather":
                src = g.producer(p.input[0])
                idx = g.const(p.input[1])
                if src is not None and src.op_type == "Shape" and idx is not None and idx.size == 1:
                    return p, int(idx.reshape(-1)[0])
                return None
            if p.op_type == "Shape":
                start = g.attr(p, "start", 0)
                end = g.attr(p, "end", None)
                if end is not None and end == start + 1:
                    return p, int(start)
                return None
        return None

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        expand, concat_name = site
        concat = _node(g, concat_name)
        src, _ = self._axis_source(g, concat.input[0]) or (None, 0)
        assert src is not None
        if src.op_type == "Gather":
            new = g.clone(src, concat, "Gather")
            new.input[1] = g.new_const("axis", np.array(1, dtype=np.int64))
        else:
            new = g.clone(src, concat, "Shape")
            g.set_attr(new, "start", 1)
            g.set_attr(new, "end", 2)
        # re-apply the Unsqueeze/Cast chain between the source and the Concat element
        chain = []
        for p in g.up(concat.input[0], {"Unsqueeze", "Cast", "Squeeze"}, depth=4):
            if p is src:
                break
            chain.append(p)
        tensor = new.output[0]
        for p in reversed(chain):
            c = g.clone(p, concat, p.op_type)
            c.input[0] = tensor
            tensor = c.output[0]
        g.set_input(concat, 0, tensor)
        return self.result(
            g,
            spec,
            f"the Expand target of {expand} takes dim 1 (sequence) of {src.input[0]} where dim 0 (batch) belongs",
            [expand, concat.name, src.name],
            fails=_sizes(spec, batch=2, seq=7),
            passes=_sizes(spec, batch=1, seq=7),
        )


class MaskThroughGatherND(BugClass):
    """The padding mask is looked up with GatherND, and the batch index is unsqueezed on the wrong axes:
    the gathered mask comes out [1, 1, B, S] and meets the causal/query axis. Runs only for batch 1."""

    name = "mask-gathernd"
    latent = True
    must_be_latent = True

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for n in g.nodes:
            if n.op_type != "GatherND" or "attention_mask" not in g.ancestors(n.input[0]):
                continue
            concat = g.producer(n.input[1])
            if concat is None or concat.op_type != "Concat":
                continue
            # first index (batch): ... Unsqueeze(Range(batch), [1, 2]) ...
            for p in g.ancestors(concat.input[0]):
                q = g.producer(p)
                if q is not None and q.op_type == "Unsqueeze":
                    axes = g.const(q.input[1])
                    if axes is not None and axes.tolist() == [1, 2]:
                        out.append((n.name, q.name))
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        gnd, unsq = site
        node = _node(g, unsq)
        g.set_input(node, 1, g.new_const("axes", np.array([0, 1], dtype=np.int64)))
        return self.result(
            g,
            spec,
            f"batch index of the mask lookup {gnd} unsqueezed on axes [0, 1] (was [1, 2])",
            [gnd, node.name],
            fails=_sizes(spec, batch=2, seq=7),
            passes=_sizes(spec, batch=1, seq=7),
        )


class ConcatWrongAxis(BugClass):
    """A Concat of activations (rotate_half, the rotary table) along the wrong axis, before a Mul/Add."""

    name = "concat-wrong-axis"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for n in g.nodes:
            if n.op_type != "Concat" or len(n.input) != 2 or any(g.is_const(i) for i in n.input):
                continue
            axis = g.attr(n, "axis", 0)
            if axis not in (-1, 2, 3):
                continue
            users = {c.op_type for c in g.consumers(n.output[0])}
            if users & {"Mul", "Add", "Cos", "Sin"}:
                out.append(n.name)
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site)
        g.set_attr(node, "axis", -2)
        g.edited.append(node.name)
        return self.result(g, spec, f"{node.name} concatenates along axis -2 instead of -1", [node.name])


def _conv_upstream(g: Graph, tensor: str) -> onnx.NodeProto | None:
    through = {
        "Relu", "Clip", "BatchNormalization", "Mul", "Add", "Transpose", "LayerNormalization", "MatMul",
        "Div", "Erf", "Sub", "Pow", "ReduceMean", "Sqrt", "Gelu", "Identity", "Pad", "HardSigmoid", "Sigmoid",
    }  # fmt: skip
    for p in g.up(tensor, through, depth=20):
        if p.op_type == "Conv":
            return p
    return None


class ResidualStride(BugClass):
    """The conv on one branch of an Add gets the wrong stride: the branches' spatial dims clash."""

    name = "conv-stride-mismatch"
    fail_ops = frozenset({"Add"})

    def fails(self, spec: ModelSpec) -> dict[str, int]:
        # large enough that the deepest stage is still more than 1x1 (a stride on 1x1 changes nothing)
        return _sizes(spec, batch=2, seq=7, height=64, width=64)

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        seen = set()
        for n in g.nodes:
            if n.op_type != "Add" or len(n.input) != 2:
                continue
            for t in n.input:
                conv = _conv_upstream(g, t)
                if conv is not None and conv.name not in seen:
                    k = g.attr(conv, "kernel_shape", [])
                    if len(k) in (1, 2):
                        seen.add(conv.name)
                        out.append((n.name, conv.name))
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        add, conv_name = site
        conv = _node(g, conv_name)
        strides = list(g.attr(conv, "strides", [1] * len(g.attr(conv, "kernel_shape"))))
        new = [1 if s > 1 else 2 for s in strides]
        g.set_attr(conv, "strides", new)
        g.edited.append(conv.name)
        return self.result(
            g, spec, f"{conv.name} strides {new} instead of {strides}: {add} branches clash", [add, conv.name]
        )


class SliceOffByOne(BugClass):
    """A Slice with constant bounds that keeps one element too many (padding left on, half + 1)."""

    name = "slice-off-by-one"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for n in g.nodes:
            src = g.producer(n.input[0]) if n.op_type == "Slice" else None
            if src is not None and src.op_type == "Shape":
                continue  # a slice of a shape vector changes a rank, not a broadcast
            if n.op_type == "Slice" and len(n.input) >= 3 and not g.is_const(n.input[0]):
                ends = g.const(n.input[2])
                starts = g.const(n.input[1])
                if ends is not None and starts is not None and ends.size == 1 and ends.reshape(-1)[0] < 2**30:
                    out.append(n.name)
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site)
        ends = g.const(node.input[2])
        assert ends is not None
        e = int(ends.reshape(-1)[0])
        new = INT64_MAX if e == -1 else e + 1
        g.set_input(node, 2, g.new_const("ends", np.array([new], dtype=ends.dtype)))
        return self.result(
            g, spec, f"{node.name} ends at {new if new != INT64_MAX else 'the end'} instead of {e}", [node.name]
        )


class PositionTableLength(BugClass):
    """A position table (an initializer added to [B, L, N]) with one row too few: made for another size."""

    name = "position-table-length"

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        out = []
        for n in g.nodes:
            if n.op_type != "Add":
                continue
            for i, t in enumerate(n.input):
                v = g.const(t)
                if v is not None and v.ndim in (2, 3) and v.shape[-2] > 4 and v.shape[-1] > 4:
                    out.append((n.name, i))
        return out

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site[0])
        v = g.const(node.input[site[1]])
        assert v is not None
        short = v[..., :-1, :]
        g.set_input(node, site[1], g.new_const("positions", short))
        return self.result(
            g,
            spec,
            f"position table of {node.name} has {short.shape[-2]} rows for {v.shape[-2]} positions",
            [node.name],
        )


BUGS: tuple[BugClass, ...] = (
    TransposedBias(),
    ReshapedBias(),
    NormWrongLength(),
    MaskWrongAxis((2, 3)),
    MaskWrongAxis((0, 1)),
    WrongHeadSplit(),
    MatMulBatchClash(),
    FixedPositionLength(),
    BatchFoldedReshape(),
    ExpandWrongAxis(),
    MaskThroughGatherND(),
    ConcatWrongAxis(),
    ResidualStride(),
    SliceOffByOne(),
    PositionTableLength(),
)


def candidates(clean: onnx.ModelProto, spec: ModelSpec, bug: BugClass, limit: int | None = None) -> Iterator[Injection]:
    """Up to ``limit`` injections of ``bug`` into copies of ``clean``, middle sites first.

    Why middle first: the first site is often the embedding block; a site inside the layers
    exercises the checker's propagation through more of the graph.
    """
    probe = Graph(copy.deepcopy(clean), bug.name)
    sites = bug.sites(probe, spec)
    order = list(range(len(sites)))
    if not bug.ordered:
        order.sort(key=lambda i: abs(i - len(sites) // 2))
    made = 0
    limit = bug.tries if limit is None else limit
    for i in order:
        if made >= limit:
            return
        model = copy.deepcopy(clean)
        g = Graph(model, bug.name)
        inj = bug.apply(g, spec, sites[i])
        if inj is None:
            continue
        g.drop_stale_value_info()
        inj.model = model
        made += 1
        yield inj


def get_bug(key: str) -> BugClass:
    for b in BUGS:
        if b.key == key:
            return b
    raise KeyError(key)
