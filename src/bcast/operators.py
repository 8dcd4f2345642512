"""The operator table: every ONNX operator that :mod:`bcast.ops` computes, each declared once.

An entry (a :class:`Spec`) holds all that the rest of bcast needs to know about one
operator: its ``bcast.ops`` name and ONNX name, its inputs and how many it takes, how
it broadcasts, ONNX's type constraints and the type of its result, how its opsets
before 7 (or 8) broadcast, the Array API function that computes it on other libraries'
arrays, and the rule that differentiates it. Every other table is derived from this one:

- :mod:`bcast.ops`: its ``Spec`` objects (``arithmetic.ADD``...) and the sets
  :data:`MULTIDIRECTIONAL`, :data:`UNIDIRECTIONAL`, :data:`BIDIRECTIONAL`,
  :data:`ONNX_OPERATORS`, :data:`LEGACY_BROADCAST`, :data:`SAME_SHAPE_BEFORE_8`;
- :mod:`bcast.engines.foreign`: :data:`KERNEL_NAMES` and :func:`kernel_name`;
- :mod:`bcast.ops.grad`: ``DIFFERENTIABLE`` and the input names of the gradients;
- :mod:`bcast.onnx.handlers`: the handlers of the multidirectional operators.

Adding an operator is one entry here, its kernel in :mod:`bcast.ops` (and, where the
Array API lacks it, in :mod:`bcast.engines.array_api_kernels`), and its tests.

The type sets are copied from the operator schemas of ONNX's newest opsets; a test checks
them against ``onnx.defs`` so that a change upstream is noticed. This module declares and
imports nothing of bcast's but the errors' words: it sits below the engines.

>>> BY_NAME["pow"].onnx, BY_NAME["pow"].types_of(1) == NUMERIC, "Pow" in LEGACY_BROADCAST
('Pow', True, True)
>>> kernel_name("mod", {"fmod": 1}), KERNEL_NAMES["sub"]
('fmod', 'subtract')
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "ALL",
    "BIDIRECTIONAL",
    "BOOL",
    "BY_NAME",
    "BY_ONNX",
    "DIFFERENTIABLE",
    "FLOATS",
    "INTS",
    "KERNEL_NAMES",
    "LEGACY_BROADCAST",
    "MULTIDIRECTIONAL",
    "NUMERIC",
    "ONNX_OPERATORS",
    "OPERATORS",
    "SAME_SHAPE_BEFORE_8",
    "SIGNED",
    "UNIDIRECTIONAL",
    "UNSIGNED",
    "Spec",
    "check_types",
    "kernel_name",
    "of_kind",
    "onnx_type",
]

# -- ONNX's tensor types ------------------------------------------------------------------

SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTS = SIGNED | UNSIGNED
FLOATS = frozenset({"float16", "float", "double", "bfloat16"})
NUMERIC = INTS | FLOATS
BOOL = frozenset({"bool"})
ALL = NUMERIC | BOOL | frozenset({"string", "complex64", "complex128"})
#: PRelu's and Gemm's T: the floats and the 32- and 64-bit integers
_NUMERIC_32_64 = FLOATS | frozenset({"int32", "int64", "uint32", "uint64"})

_BY_DTYPE = {
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
    "float16": "float16",
    "bfloat16": "bfloat16",
}


@functools.lru_cache(maxsize=256)  # read for every input of every call; dtypes are few and hashable
def onnx_type(dtype: np.dtype[Any]) -> str:
    """The ONNX element type name of a NumPy dtype (``"float"``, ``"int64"``, ``"string"``, ...).

    >>> onnx_type(np.dtype(np.float32)), onnx_type(np.dtype("U3")), onnx_type(np.dtype(np.uint8))
    ('float', 'string', 'uint8')
    """
    if dtype.kind in "UO":  # ONNX strings live in NumPy as str or object arrays
        return "string"
    name = str(dtype.name)
    if dtype.kind in "iu":
        return name
    return _BY_DTYPE.get(name, f"unsupported {name}")


# -- the entry ----------------------------------------------------------------------------

Broadcast = Literal["multidirectional", "unidirectional", "bidirectional"]


def _snake(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out + "_" if out in ("and", "or") else out  # Python keywords


@dataclass(frozen=True)
class Spec:
    """One ONNX operator: its names, inputs, broadcasting, type rules, kernel and gradient.

    ``types`` is ONNX's ``T``, the type of every input that ``own_types`` does not give a
    constraint of its own (Pow's exponent ``T1``, Where's condition ``B``, RMSNormalization's
    scale ``V``); inputs of ``T`` must agree. The result has the type of input
    ``output_like`` (bool where ``bool_output``).
    """

    onnx: str
    inputs: tuple[str, ...]
    types: frozenset[str]
    bool_output: bool = False
    #: (input index, type set) of each input with a type constraint of its own
    own_types: tuple[tuple[int, frozenset[str]], ...] = ()
    #: the input whose type the result has
    output_like: int = 0
    broadcast: Broadcast = "multidirectional"
    #: the fewest and the most inputs (``None``: any number, a variadic operator)
    arity: tuple[int, int | None] = (2, 2)
    #: opsets 1-6 broadcast only with ``broadcast=1`` (and an optional ``axis``): ONNX's legacy rule
    legacy_broadcast: bool = False
    #: opsets 1-7 require inputs of one shape
    same_shape_before_8: bool = False
    #: the Array API function that computes it on other libraries' arrays (``None``: its own kernel)
    kernel: str | None = None
    #: (attribute, value, function): another Array API function where the attribute has that value
    kernel_variants: tuple[tuple[str, object, str], ...] = ()
    #: the keywords of the ``bcast.ops`` function that carry ONNX's attributes
    attributes: tuple[str, ...] = ()
    #: the rule of :mod:`bcast.ops.grad` that differentiates it (``None``: not differentiable)
    gradient: str | None = None
    #: the ``bcast.ops`` function's name (``""``: the ONNX name in snake_case; acronyms need theirs)
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", _snake(self.onnx))

    @property
    def variadic(self) -> bool:
        """Whether it takes any number of inputs (Max, Min, Mean, Sum)."""
        return self.arity[1] is None

    @property
    def takes_mode(self) -> bool:
        """Whether its ``bcast.ops`` function takes ``mode`` and ``axis`` (the binary and variadic ones)."""
        return self.broadcast == "multidirectional" and (self.variadic or self.arity == (2, 2))

    @property
    def second_types(self) -> frozenset[str] | None:
        """The type set of the second input when it has one of its own (Pow's ``T1``)."""
        return self._own.get(1)

    @functools.cached_property  # read for every input of every call
    def _own(self) -> dict[int, frozenset[str]]:
        return dict(self.own_types)

    def types_of(self, index: int) -> frozenset[str]:
        """The type set input ``index`` may have."""
        return self._own.get(index, self.types)

    def in_t(self, index: int) -> bool:
        """Whether input ``index`` is of ``T`` (its type must agree with the other inputs of ``T``)."""
        return index not in self._own

    def kernel_for(self, attrs: Mapping[str, Any]) -> str:
        """The Array API function for these attributes (Mod's ``fmod=1``: ``fmod``)."""
        for key, value, name in self.kernel_variants:
            if attrs.get(key) == value:
                return name
        if self.kernel is None:
            raise KeyError(self.name)
        return self.kernel


# -- the table ----------------------------------------------------------------------------


def _binary(onnx: str, types: frozenset[str], kernel: str, **more: Any) -> Spec:
    """A multidirectional operator of two inputs ``A`` and ``B`` (the usual case)."""
    inputs = more.pop("inputs", ("A", "B"))
    return Spec(onnx, inputs, types, kernel=kernel, **more)


def _variadic(onnx: str, types: frozenset[str], kernel: str, gradient: str) -> Spec:
    return Spec(onnx, ("data_0",), types, arity=(1, None), same_shape_before_8=True, kernel=kernel, gradient=gradient)


_NORM = ("axis", "epsilon", "stash_type")

#: Every operator, in the order of the ``bcast.ops`` documentation.
OPERATORS: tuple[Spec, ...] = (
    _binary("Add", NUMERIC, "add", legacy_broadcast=True, gradient="add"),
    _binary("Sub", NUMERIC, "subtract", legacy_broadcast=True, gradient="sub"),
    _binary("Mul", NUMERIC, "multiply", legacy_broadcast=True, gradient="mul"),
    _binary("Div", NUMERIC, "divide", legacy_broadcast=True, gradient="div"),
    _binary(
        "Pow",
        frozenset({"int32", "int64"}) | FLOATS,
        "pow",
        inputs=("X", "Y"),
        own_types=((1, NUMERIC),),
        legacy_broadcast=True,
        gradient="pow",
    ),
    _binary("Mod", NUMERIC, "remainder", kernel_variants=(("fmod", 1, "fmod"),), attributes=("fmod",)),
    _binary("Equal", NUMERIC | BOOL | frozenset({"string"}), "equal", bool_output=True, legacy_broadcast=True),
    _binary("Greater", NUMERIC, "greater", bool_output=True, legacy_broadcast=True),
    _binary("GreaterOrEqual", NUMERIC, "greater_equal", bool_output=True),
    _binary("Less", NUMERIC, "less", bool_output=True, legacy_broadcast=True),
    _binary("LessOrEqual", NUMERIC, "less_equal", bool_output=True),
    _binary("And", BOOL, "logical_and", bool_output=True, legacy_broadcast=True),
    _binary("Or", BOOL, "logical_or", bool_output=True, legacy_broadcast=True),
    _binary("Xor", BOOL, "logical_xor", bool_output=True, legacy_broadcast=True),
    _binary("BitwiseAnd", INTS, "bitwise_and"),
    _binary("BitwiseOr", INTS, "bitwise_or"),
    _binary("BitwiseXor", INTS, "bitwise_xor"),
    _binary(
        "BitShift",
        INTS,
        "bitwise_left_shift",
        inputs=("X", "Y"),
        kernel_variants=(("direction", "RIGHT", "bitwise_right_shift"),),
        attributes=("direction",),
        name="bitshift",
    ),
    _variadic("Max", NUMERIC, "maximum", "extreme"),
    _variadic("Min", NUMERIC, "minimum", "extreme"),
    _variadic("Mean", FLOATS, "mean", "spread"),
    _variadic("Sum", FLOATS, "add", "spread"),
    Spec(
        "Where",
        ("condition", "X", "Y"),
        ALL,
        own_types=((0, BOOL),),
        output_like=1,
        arity=(3, 3),
        kernel="where",
        gradient="where",
    ),
    Spec("PRelu", ("X", "slope"), _NUMERIC_32_64, broadcast="unidirectional", gradient="prelu", name="prelu"),
    Spec(
        "Gemm",
        ("A", "B", "C"),
        _NUMERIC_32_64,
        broadcast="unidirectional",
        arity=(2, 3),
        attributes=("alpha", "beta", "trans_a", "trans_b"),
        gradient="gemm",
    ),
    Spec("LayerNormalization", ("X", "Scale", "B"), FLOATS, broadcast="unidirectional", arity=(2, 3), attributes=_NORM),
    Spec(
        "RMSNormalization",
        ("X", "scale"),
        FLOATS,
        own_types=((1, FLOATS),),  # ONNX's V: the same set as T, but its own type
        output_like=1,
        broadcast="unidirectional",
        attributes=_NORM,
        name="rms_normalization",
    ),
    Spec(
        "Expand",
        ("input", "shape"),
        ALL,
        own_types=((1, frozenset({"int64"})),),
        broadcast="bidirectional",
        gradient="expand",
    ),
)

# -- derived tables -----------------------------------------------------------------------


def _by(key: str, specs: Iterable[Spec]) -> dict[str, Spec]:
    table: dict[str, Spec] = {}
    for spec in specs:
        k = getattr(spec, key)
        if k in table:
            raise ValueError(f"the operator table declares {k} twice")
        table[k] = spec
    return table


#: The entries by ``bcast.ops`` name and by ONNX name.
BY_NAME: dict[str, Spec] = _by("name", OPERATORS)
BY_ONNX: dict[str, Spec] = _by("onnx", OPERATORS)


def of_kind(kind: Broadcast, specs: Iterable[Spec] = OPERATORS) -> tuple[Spec, ...]:
    """The entries that broadcast by ``kind``, in the table's order."""
    return tuple(s for s in specs if s.broadcast == kind)


#: ONNX operators whose definition broadcasts, by rule (the names ONNX uses)
MULTIDIRECTIONAL = frozenset(s.onnx for s in of_kind("multidirectional"))
UNIDIRECTIONAL = frozenset(s.onnx for s in of_kind("unidirectional"))
BIDIRECTIONAL = frozenset(s.onnx for s in of_kind("bidirectional"))
ONNX_OPERATORS = MULTIDIRECTIONAL | UNIDIRECTIONAL | BIDIRECTIONAL
#: Ops whose opset 1-6 versions broadcast only with ``broadcast=1`` (and an optional ``axis``).
LEGACY_BROADCAST = frozenset(s.onnx for s in OPERATORS if s.legacy_broadcast)
#: Ops whose opset 1-7 versions require inputs of one shape.
SAME_SHAPE_BEFORE_8 = frozenset(s.onnx for s in OPERATORS if s.same_shape_before_8)
#: The Array API function that computes each binary or variadic ``bcast.ops`` operator (and Where).
KERNEL_NAMES = {s.name: s.kernel for s in OPERATORS if s.kernel is not None}
#: the ``bcast.ops`` names of the operators :func:`bcast.ops.grad.vjp` differentiates
DIFFERENTIABLE = tuple(s.name for s in OPERATORS if s.gradient is not None)


def kernel_name(spec_name: str, attrs: Mapping[str, Any]) -> str:
    """The Array API function for ``spec_name`` with these attributes (``fmod=1``: ``fmod``, not in the standard).

    >>> kernel_name("bitshift", {"direction": "RIGHT"}), kernel_name("sum", {})
    ('bitwise_right_shift', 'add')
    """
    return BY_NAME[spec_name].kernel_for(attrs)


# -- ONNX's type constraints, checked -----------------------------------------------------


def _native(dtype: Any) -> Any:
    """``dtype`` in this machine's byte order: byte order is no type (another library's dtype as it is)."""
    return dtype.newbyteorder("=") if isinstance(dtype, np.dtype) and not dtype.isnative else dtype


def _types_text(types: frozenset[str]) -> str:
    return ", ".join(sorted(types))


def check_types(
    spec: Spec, arrays: Sequence[Any], names: Sequence[str] | None = None, as_numpy: Callable[[Any], Any] | None = None
) -> None:
    """ONNX's type constraints: each input's element type is allowed, and inputs of ``T`` agree.

    ``arrays`` are the inputs (anything with a ``dtype``: their dtypes as their library names
    them are quoted in the ``TypeError``), ``names`` their names (``spec.inputs`` by default);
    ``as_numpy`` gives the NumPy dtype of another library's (what :func:`onnx_type` reads),
    NumPy's own dtypes passing as they are.

    >>> check_types(BY_NAME["add"], [np.ones(2, np.float32), np.ones(2)])
    Traceback (most recent call last):
    ...
    TypeError: add: inputs A and B must have the same type (ONNX's T), got float32 and float64; cast one of them first
    """
    first = None
    own = spec._own
    for i, (x, n) in enumerate(zip(arrays, names or spec.inputs, strict=True)):
        dtype = x.dtype
        allowed = own.get(i, spec.types)
        t = onnx_type(dtype if as_numpy is None or isinstance(dtype, np.dtype) else as_numpy(dtype))
        if t not in allowed:
            raise TypeError(
                f"{spec.name}: input {n} has dtype {dtype} (ONNX {t}); {spec.onnx} takes {_types_text(allowed)}"
            )
        if i in own:
            continue  # a constraint of its own (T1, B, V): nothing to agree with
        if first is None:
            first = (n, dtype, t)
        elif t != first[2] or (t != "string" and _native(dtype) != _native(first[1])):
            raise TypeError(
                f"{spec.name}: inputs {first[0]} and {n} must have the same type (ONNX's T), got "
                f"{first[1]} and {dtype}; cast one of them first"
            )
