"""Bad input gets a clear error, never a crash or a hang.

Every public entry point and every mode is fed bad input, and each answer is checked
against the contract (API.md):

* the exception is a ``BroadcastError`` (which is a ``ValueError``) or a ``TypeError``,
  and nothing else (no IndexError, AttributeError, bare ValueError, ...);
* its message names the mode, the shapes as the user gave them (a tuple ``(2, 3)`` as
  ``(2, 3)``, a string ``"[2,3]"`` verbatim), the output axis and the two dims that clash,
  and what would have been accepted; a ``BroadcastError`` carries the same facts as the
  attributes ``mode``, ``shapes``, ``axis``, ``dims`` and ``accepted``;
* a copy larger than addressable memory, or than the RAM available, is refused before
  anything is allocated; a view with more elements than ``intp`` can index is refused;
* ``out=`` is checked (type, shape, dtype, writability, overlap with the input);
* inputs are never mutated, and views are read-only;
* no case hangs (an alarm fails any test that runs past ``TIME_LIMIT_S``).
"""

from __future__ import annotations

import re
import signal
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcast
import bcast.engines.memory as memory
from bcast import BroadcastError, Dim, Shape
from bcast.engines.numpy import pool
from hostile import assert_linear, steps

MODES = ("numpy", "bidirectional", "explicit", "pdpd", "axes", "like", "none")
ELEMENTWISE_MODES = ("numpy", "pdpd", "none", "bidirectional")
#: The extra argument each mode takes (API.md's table).
MODE_ARG = {"explicit": "axes_mapping", "pdpd": "axis", "axes": "broadcast_axes", "like": "broadcast_axes"}
#: A test still running after this long fails: a hang (a guard; no test measures how long anything took).
TIME_LIMIT_S = 30
#: Refusing bad input may take at most this much work (:func:`hostile.steps`: Python lines run and
#: functions called), the modules a first refusal imports included; refusing a copy may allocate at most
#: FEW_BYTES.
REFUSAL_STEPS = 1_000_000
FEW_BYTES = 1 << 20


# --------------------------------------------------------------------------------------
# The machinery: a table row, and the checks every row gets.
# --------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    """Fail, rather than hang, any test that runs past TIME_LIMIT_S."""

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the test ran for more than {TIME_LIMIT_S} s: a hang")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Bad:
    """One bad call and what its error must say.

    ``mode``      named in the message (as a word), and ``.mode`` of a BroadcastError
    ``shapes``    each verbatim in the message, and in ``.shapes`` of a BroadcastError
    ``axis``      ``.axis`` of the BroadcastError, and named in the message
    ``dims``      ``.dims`` of the BroadcastError, each named in the message
    ``accepted``  a regex found in the message, and in ``.accepted`` of a BroadcastError
    ``also``      more regexes the message must match
    ``never``     regexes the message must not match
    """

    call: Callable[[], object]
    exc: type[Exception]
    mode: str | None = None
    shapes: tuple[str, ...] = ()
    axis: int | None = None
    dims: tuple[str, ...] = ()
    accepted: str | None = None
    also: tuple[str, ...] = ()
    never: tuple[str, ...] = ()


def _word(text: str) -> str:
    """A regex for ``text`` standing alone (not part of a longer name or number)."""
    return rf"(?<![\w.]){re.escape(text)}(?![\w.])"


def expect(case: Bad) -> BaseException:
    """Run the bad call; check the exception's type, then its message and attributes.

    Every shortfall of the message and attributes is collected, so that one failure
    lists all of them.
    """
    caught: list[BaseException] = []

    def call() -> None:
        try:
            case.call()
        except BaseException as e:
            caught.append(e)

    work = steps(call)
    if not caught:
        pytest.fail(f"DID NOT RAISE {case.exc.__name__}")
    err = caught[0]
    if not isinstance(err, case.exc):
        raise err
    msg = str(err)
    assert type(err) is case.exc, f"expected exactly {case.exc.__name__}, got {type(err).__name__}: {msg}"
    assert work < REFUSAL_STEPS, f"took {work:,} steps to refuse"
    is_be = isinstance(err, BroadcastError)
    if is_be:
        assert isinstance(err, ValueError)
    problems: list[str] = []

    def want(ok: object, problem: str) -> None:
        if not ok:
            problems.append(problem)

    if case.mode is not None:
        want(re.search(_word(case.mode), msg), f"the message does not name the mode {case.mode!r}")
        if is_be:
            want(err.mode == case.mode, f".mode is {err.mode!r}, not {case.mode!r}")
    for shape in case.shapes:
        want(shape in msg, f"the message does not show the shape {shape} as given")
        if is_be:
            want(shape in err.shapes, f".shapes {err.shapes!r} lacks {shape!r}")
    if case.axis is not None:
        want(is_be and err.axis == case.axis, f".axis is {getattr(err, 'axis', None)!r}, not {case.axis}")
        want(re.search(_word(str(case.axis)), msg), f"the message does not name axis {case.axis}")
    if case.dims:
        want(is_be and err.dims == case.dims, f".dims is {getattr(err, 'dims', None)!r}, not {case.dims!r}")
        for d in case.dims:
            want(re.search(_word(d), msg), f"the message does not name the dim {d}")
    if case.accepted is not None:
        want(re.search(case.accepted, msg), f"the message does not say what is accepted (/{case.accepted}/)")
        if is_be:
            want(
                err.accepted is not None and re.search(case.accepted, err.accepted),
                f".accepted is {err.accepted!r}, which lacks /{case.accepted}/",
            )
    for pattern in case.also:
        want(re.search(pattern, msg), f"the message lacks /{pattern}/")
    for pattern in case.never:
        want(not re.search(pattern, msg), f"the message should not match /{pattern}/")
    assert not problems, f"{type(err).__name__}: {msg}\n  - " + "\n  - ".join(problems)
    return err


def cases(*rows: tuple[str, Bad]) -> list[Any]:
    return [pytest.param(bad, id=name) for name, bad in rows]


BE, TE = BroadcastError, TypeError
NEGATIVE = r">= 0"  # what a negative dim is told: a size >= 0
TOO_BIG = r"2\*\*63 - 1|9223372036854775807"
INTEGER = r"integer"
READABLE_DIM = r"a size \(3\)"


def test_broadcast_error_is_a_value_error() -> None:
    assert issubclass(BroadcastError, ValueError)
    assert not issubclass(BroadcastError, TypeError)


# --------------------------------------------------------------------------------------
# Shape(...), Shape.parse, Dim(...): no mode applies, the value as given must be named.
# --------------------------------------------------------------------------------------
SHAPE_AND_DIM = cases(
    ("Shape-negative-dim", Bad(lambda: Shape((2, -3)), BE, shapes=("(2, -3)",), accepted=NEGATIVE)),
    ("Shape-negative-numpy-int", Bad(lambda: Shape((np.int64(-2),)), BE, accepted=NEGATIVE, also=(r"-2",))),
    ("Shape-str-negative-dim", Bad(lambda: Shape("[2,-3]"), BE, shapes=("[2,-3]",), accepted=NEGATIVE)),
    ("Shape-fractional-dim", Bad(lambda: Shape((2, 1.5)), TE, shapes=("(2, 1.5)",), accepted=INTEGER)),
    ("Shape-float-dim", Bad(lambda: Shape((2, 3.0)), TE, shapes=("(2, 3.0)",), accepted=INTEGER)),
    ("Shape-numpy-float-dim", Bad(lambda: Shape((np.float64(2),)), TE, accepted=INTEGER)),
    ("Shape-nan-dim", Bad(lambda: Shape((float("nan"),)), TE, accepted=INTEGER)),
    ("Shape-inf-dim", Bad(lambda: Shape((float("inf"),)), TE, accepted=INTEGER)),
    ("Shape-bool-dim", Bad(lambda: Shape((2, True)), TE, shapes=("(2, True)",), accepted=INTEGER)),
    ("Shape-numpy-bool-dim", Bad(lambda: Shape((np.bool_(True),)), TE, accepted=INTEGER)),
    ("Shape-None-dim", Bad(lambda: Shape((2, None)), TE, shapes=("(2, None)",), accepted=r"'\?'")),
    ("Shape-str-dim-in-tuple", Bad(lambda: Shape((2, "3")), TE, shapes=("(2, '3')",), accepted=r"integer|Dim")),
    ("Shape-complex-dim", Bad(lambda: Shape((2j,)), TE, accepted=INTEGER)),
    ("Shape-nested-tuple", Bad(lambda: Shape(((2,), 3)), TE, shapes=("((2,), 3)",), accepted=INTEGER)),
    ("Shape-huge-dim", Bad(lambda: Shape((2, 2**70)), BE, shapes=(f"(2, {2**70})",), accepted=TOO_BIG)),
    ("Shape-2**63", Bad(lambda: Shape((2**63,)), BE, accepted=TOO_BIG)),
    ("Shape-str-huge-dim", Bad(lambda: Shape("[2," + "9" * 30 + "]"), BE, accepted=TOO_BIG)),
    # Python refuses int() of more than 4300 digits with a bare ValueError: it must not escape.
    ("Shape-str-5000-digit-dim", Bad(lambda: Shape("[" + "9" * 5000 + "]"), BE, accepted=TOO_BIG)),
    ("Shape-None", Bad(lambda: Shape(None), TE, accepted=r"tuple|sequence", also=(r"None",))),
    ("Shape-float", Bad(lambda: Shape(2.0), TE, accepted=r"tuple|sequence", also=(r"2\.0",))),
    ("Shape-bool", Bad(lambda: Shape(True), TE, accepted=r"tuple|sequence", also=(r"True",))),
    ("Shape-dict", Bad(lambda: Shape({2: 3}), TE, accepted=r"tuple|sequence", also=(r"dict",))),
    ("Shape-set", Bad(lambda: Shape({2, 3}), TE, accepted=r"tuple|sequence", also=(r"set",))),
    ("Shape-object", Bad(lambda: Shape(object()), TE, accepted=r"tuple|sequence", also=(r"object",))),
    ("Shape-generator", Bad(lambda: Shape(d for d in (2, 3)), TE, accepted=r"tuple|sequence", also=(r"generator",))),
    # bytes are a Sequence of ints: b"[2,3]" must not silently become the shape [91,50,44,51,93].
    ("Shape-bytes", Bad(lambda: Shape(b"[2,3]"), TE, accepted=r"string|tuple", also=(r"bytes",))),
    ("Shape-bytearray", Bad(lambda: Shape(bytearray(b"\x02\x03")), TE, accepted=r"string|tuple")),
    ("Shape-2d-array", Bad(lambda: Shape(np.zeros((2, 2), int)), TE, accepted=r"1-D", also=(r"2-D",))),
    ("Shape-float-array", Bad(lambda: Shape(np.zeros(2)), TE, accepted=r"integer dtype", also=(r"float64",))),
    ("Shape-str-unbalanced", Bad(lambda: Shape("[2,3"), BE, also=(re.escape("'[2,3'"), r"bracket"))),
    ("Shape-str-empty-dim", Bad(lambda: Shape("[2,,3]"), BE, also=(re.escape("[2,,3]"), r"empty"))),
    ("Shape-str-junk-dim", Bad(lambda: Shape("[2,x y]"), BE, shapes=("[2,x y]",), accepted=READABLE_DIM)),
    ("Shape-str-fractional", Bad(lambda: Shape("[2,3.5]"), BE, shapes=("[2,3.5]",), accepted=READABLE_DIM)),
    ("Shape-str-bad-symbol", Bad(lambda: Shape("[N-1]"), BE, shapes=("[N-1]",), accepted=READABLE_DIM)),
    ("Shape-str-nested-brackets", Bad(lambda: Shape("[[2,3]]"), BE, shapes=("[[2,3]]",), accepted=READABLE_DIM)),
    ("Shape-str-nul", Bad(lambda: Shape("[2,\x00]"), BE, accepted=READABLE_DIM)),
    ("Shape-str-ellipsis-among-dims", Bad(lambda: Shape("[2,...]"), BE, shapes=("[2,...]",), also=(r"\[\.\.\.\]",))),
    ("Shape-str-empty-interval", Bad(lambda: Shape("[5..2]"), BE, shapes=("[5..2]",), also=(r"empty",))),
    ("Shape-str-negative-interval", Bad(lambda: Shape("[-5..2]"), BE, shapes=("[-5..2]",), accepted=NEGATIVE)),
    ("Shape-str-huge-interval", Bad(lambda: Shape("[1.." + "9" * 25 + "]"), BE, accepted=TOO_BIG)),
    ("Shape.parse-int", Bad(lambda: Shape.parse(3), TE, accepted=r"string", also=(r"int",))),
    ("Shape.parse-None", Bad(lambda: Shape.parse(None), TE, accepted=r"string", also=(r"NoneType",))),
    ("Shape.parse-tuple", Bad(lambda: Shape.parse((2, 3)), TE, accepted=r"string", also=(r"tuple",))),
    ("Shape.parse-bytes", Bad(lambda: Shape.parse(b"[2]"), TE, accepted=r"string", also=(r"bytes",))),
    ("Shape.parse-junk", Bad(lambda: Shape.parse("[2;3]"), BE, shapes=("[2;3]",), accepted=READABLE_DIM)),
    ("Dim-negative", Bad(lambda: Dim(-2), BE, accepted=NEGATIVE, also=(r"-2",))),
    ("Dim-fractional", Bad(lambda: Dim(2.5), TE, accepted=INTEGER, also=(r"2\.5",))),
    ("Dim-bool", Bad(lambda: Dim(True), TE, accepted=INTEGER, also=(r"True",))),
    ("Dim-None", Bad(lambda: Dim(None), TE, accepted=r"'\?'", also=(r"None",))),
    ("Dim-huge", Bad(lambda: Dim(2**63), BE, accepted=TOO_BIG, also=(str(2**63),))),
    ("Dim-list", Bad(lambda: Dim([2]), TE, accepted=INTEGER, also=(r"list",))),
    ("Dim-bytes", Bad(lambda: Dim(b"3"), TE, accepted=INTEGER, also=(r"bytes",))),
    ("Dim-no-args", Bad(lambda: Dim(), TE, accepted=r"a size", also=(r"0 arguments",))),
    ("Dim-three-args", Bad(lambda: Dim(1, 2, 3), TE, accepted=r"a size", also=(r"3 arguments",))),
    ("Dim-str-junk", Bad(lambda: Dim("x y"), BE, accepted=READABLE_DIM, also=(r"'x y'",))),
    ("Dim-str-fractional", Bad(lambda: Dim("2.5"), BE, accepted=READABLE_DIM, also=(r"'2\.5'",))),
    ("Dim-str-negative", Bad(lambda: Dim("-2"), BE, accepted=NEGATIVE)),
    ("Dim-str-huge", Bad(lambda: Dim("9" * 30), BE, accepted=TOO_BIG)),
    ("Dim-empty-interval", Bad(lambda: Dim(5, 2), BE, also=(r"5\.\.2", r"empty"))),
    ("Dim-interval-float-bound", Bad(lambda: Dim(1.0, 2), TE, accepted=INTEGER)),
    ("Dim-interval-negative", Bad(lambda: Dim(-1, 2), BE, accepted=NEGATIVE)),
    ("Dim-interval-huge", Bad(lambda: Dim(1, 2**64), BE, accepted=TOO_BIG)),
    ("Dim.symbol-int", Bad(lambda: Dim.symbol(3), TE, accepted=r"string")),
    ("Dim.symbol-bad-name", Bad(lambda: Dim.symbol("1N"), BE, accepted=r"letters", also=(r"'1N'",))),
    ("Dim.parse-int", Bad(lambda: Dim.parse(3), TE, accepted=r"string")),
)


@pytest.mark.parametrize("case", SHAPE_AND_DIM)
def test_shape_and_dim_reject_bad_values(case: Bad) -> None:
    expect(case)


def test_a_long_shape_string_parses_in_linear_time() -> None:
    """A shape string of bcast.MAX_RANK dims is read; the work grows linearly with its length (no quadratic
    path); a longer one is refused with no more work for 400,000 dims than for 40,000."""
    text = "[" + ",".join(["1"] * bcast.MAX_RANK) + "]"
    assert Shape(text).rank == bcast.MAX_RANK
    assert_linear(lambda n: lambda: Shape("[" + ",".join(["1"] * n) + "]"), 1024, what="Shape(str)")
    with pytest.raises(BroadcastError, match=r"40,000 dims.*MAX_RANK"):
        Shape("[" + ",".join(["1"] * 40_000) + "]")
    small, large = (
        steps(lambda n=n: Shape("[" + ",".join(["1"] * n) + "]"), (BroadcastError,)) for n in (40_000, 400_000)
    )
    assert large <= small + 50, f"{small:,} steps to refuse 40,000 dims, {large:,} for 400,000"


# --------------------------------------------------------------------------------------
# Bad dims and wrong containers given to the API: the error must also name the mode.
# --------------------------------------------------------------------------------------
X3 = np.zeros(3)

API_BAD_SHAPES = cases(
    # every kind of bad dim, through infer in the default mode
    ("infer-negative", Bad(lambda: bcast.infer((2, -3), (2, 3)), BE, "numpy", ("(2, -3)",), accepted=NEGATIVE)),
    ("infer-str-negative", Bad(lambda: bcast.infer("[2,-3]", "[2,3]"), BE, "numpy", ("[2,-3]",), accepted=NEGATIVE)),
    ("infer-fractional", Bad(lambda: bcast.infer((2, 1.5), (2, 3)), TE, "numpy", ("(2, 1.5)",), accepted=INTEGER)),
    ("infer-bool", Bad(lambda: bcast.infer((2, 3), (2, False)), TE, "numpy", ("(2, False)",), accepted=INTEGER)),
    ("infer-None", Bad(lambda: bcast.infer((2, None), (2, 3)), TE, "numpy", ("(2, None)",), accepted=r"'\?'")),
    ("infer-str-dim", Bad(lambda: bcast.infer((2, "3"), (2, 3)), TE, "numpy", ("(2, '3')",), accepted=r"Dim")),
    ("infer-huge", Bad(lambda: bcast.infer((1,), (2**64,)), BE, "numpy", (f"({2**64},)",), accepted=TOO_BIG)),
    ("infer-dict", Bad(lambda: bcast.infer({2: 3}, (2, 3)), TE, "numpy", accepted=r"tuple", also=(r"dict",))),
    ("infer-set", Bad(lambda: bcast.infer((3,), {2, 3}), TE, "numpy", accepted=r"tuple", also=(r"set",))),
    ("infer-None-shape", Bad(lambda: bcast.infer(None, (2, 3)), TE, "numpy", accepted=r"tuple|sequence")),
    ("infer-object", Bad(lambda: bcast.infer((3,), object()), TE, "numpy", accepted=r"tuple", also=(r"object",))),
    ("infer-bytes", Bad(lambda: bcast.infer(b"[2,3]", (2, 3)), TE, "numpy", accepted=r"string|tuple")),
    # a negative dim in every other mode
    (
        "bidirectional-negative",
        Bad(lambda: bcast.infer((3,), (2, -3), "bidirectional"), BE, "bidirectional", ("(2, -3)",), accepted=NEGATIVE),
    ),
    (
        "explicit-negative",
        Bad(
            lambda: bcast.infer((3,), (-2, 3), "explicit", axes_mapping=[1]),
            BE,
            "explicit",
            ("(-2, 3)",),
            accepted=NEGATIVE,
        ),
    ),
    ("pdpd-negative", Bad(lambda: bcast.infer((-3,), (2, 3), "pdpd"), BE, "pdpd", ("(-3,)",), accepted=NEGATIVE)),
    (
        "axes-negative",
        Bad(
            lambda: bcast.infer((3,), (2, -3), "axes", broadcast_axes=[0]), BE, "axes", ("(2, -3)",), accepted=NEGATIVE
        ),
    ),
    ("like-negative", Bad(lambda: bcast.infer((3,), (3, -2), "like"), BE, "like", ("(3, -2)",), accepted=NEGATIVE)),
    ("none-negative", Bad(lambda: bcast.infer((2, -3), (2, 3), "none"), BE, "none", ("(2, -3)",), accepted=NEGATIVE)),
    # a bad dim through every other entry point
    ("plan-negative", Bad(lambda: bcast.plan((2, -3), (2, 3)), BE, "numpy", ("(2, -3)",), accepted=NEGATIVE)),
    (
        "broadcast_shapes-negative",
        Bad(lambda: bcast.broadcast_shapes((2, -3), (2, 3)), BE, "numpy", ("(2, -3)",), accepted=NEGATIVE),
    ),
    (
        "elementwise_plan-pdpd-fractional",
        Bad(lambda: bcast.elementwise_plan((2, 3), (0.5,), mode="pdpd"), TE, "pdpd", ("(0.5,)",), accepted=INTEGER),
    ),
    (
        "broadcast_to-negative",
        Bad(lambda: bcast.broadcast_to(X3, (2, -3)), BE, "numpy", ("(2, -3)",), accepted=NEGATIVE),
    ),
    (
        "broadcast_to-bidirectional-bool",
        Bad(lambda: bcast.broadcast_to(X3, (True, 3), "bidirectional"), TE, "bidirectional", ("(True, 3)",)),
    ),
    ("expand-negative", Bad(lambda: bcast.expand(X3, (2, -3)), BE, "bidirectional", ("(2, -3)",), accepted=NEGATIVE)),
    (
        "broadcast_like-negative",
        Bad(lambda: bcast.broadcast_like(X3, (3, -2)), BE, "like", ("(3, -2)",), accepted=NEGATIVE),
    ),
    (
        "unbroadcast-negative",
        Bad(lambda: bcast.unbroadcast(np.ones(3), (-3,)), BE, "numpy", ("(-3,)",), accepted=NEGATIVE),
    ),
)


@pytest.mark.parametrize("case", API_BAD_SHAPES)
def test_bad_shapes_given_to_the_api_name_the_mode(case: Bad) -> None:
    expect(case)


# --------------------------------------------------------------------------------------
# Modes: unknown modes, arguments that belong to another mode, missing arguments.
# --------------------------------------------------------------------------------------
ALL_MODES_LISTED = tuple(rf"'{m}'" for m in MODES)
ELEMENTWISE_LISTED = tuple(rf"'{m}'" for m in ELEMENTWISE_MODES)


def _foreign_argument_rows() -> list[tuple[str, Bad]]:
    """Each mode given each extra argument that belongs to another mode."""
    values: dict[str, Any] = {"axes_mapping": [1], "axis": 0, "broadcast_axes": [0]}
    owners = {"axes_mapping": r"'explicit'", "axis": r"'pdpd'", "broadcast_axes": r"'axes' and 'like'"}
    rows = []
    for mode in MODES:
        for arg, value in values.items():
            if MODE_ARG.get(mode) == arg:
                continue
            kwargs = {arg: value}
            if mode in MODE_ARG:  # give the mode its own argument too, so only the foreign one is wrong
                own = MODE_ARG[mode]
                kwargs.setdefault(own, {"axes_mapping": [1], "axis": -1, "broadcast_axes": [0]}[own])
            rows.append(
                (
                    f"{mode}-given-{arg}",
                    Bad(
                        lambda mode=mode, kwargs=kwargs: bcast.plan((3,), (2, 3), mode, **kwargs),
                        TE,
                        mode,
                        also=(_word(arg), re.escape(str(value))),
                        accepted=rf"belongs to modes? {owners[arg]}",
                    ),
                )
            )
    return rows


MODE_ERRORS = cases(
    *_foreign_argument_rows(),
    (
        "numpy-given-axis-float-minus-one",
        Bad(
            lambda: bcast.infer((3,), (2, 3), axis=-1.0), TE, "numpy", accepted=r"belongs to modes 'pdpd' and 'legacy'"
        ),
    ),
    (
        "explicit-without-axes_mapping",
        Bad(lambda: bcast.infer((3,), (2, 3), "explicit"), TE, "explicit", also=(r"axes_mapping", r"required")),
    ),
    (
        "axes-without-broadcast_axes",
        Bad(lambda: bcast.infer((3,), (2, 3), "axes"), TE, "axes", also=(r"broadcast_axes", r"required")),
    ),
    ("plan-unknown-mode", Bad(lambda: bcast.plan((3,), (2, 3), "numpyy"), BE, also=(r"'numpyy'", *ALL_MODES_LISTED))),
    (
        "infer-unknown-mode",
        Bad(lambda: bcast.infer((3,), (2, 3), "broadcast"), BE, also=(r"'broadcast'", *ALL_MODES_LISTED)),
    ),
    ("infer-empty-mode", Bad(lambda: bcast.infer((3,), (2, 3), ""), BE, also=(r"''", *ALL_MODES_LISTED))),
    (
        "broadcast_to-unknown-mode",
        Bad(lambda: bcast.broadcast_to(X3, (2, 3), "foo"), BE, also=(r"'foo'", *ALL_MODES_LISTED)),
    ),
    ("infer-mode-int", Bad(lambda: bcast.infer((3,), (2, 3), 3), TE, also=(r"string", r"\b3\b", *ALL_MODES_LISTED))),
    ("infer-mode-None", Bad(lambda: bcast.infer((3,), (2, 3), None), TE, also=(r"string", r"None", *ALL_MODES_LISTED))),
    ("plan-mode-bytes", Bad(lambda: bcast.plan((3,), (2, 3), b"numpy"), TE, also=(r"string", r"b'numpy'"))),
    (
        "broadcast_shapes-unknown-mode",
        Bad(lambda: bcast.broadcast_shapes((3,), (2, 3), mode="foo"), BE, also=(r"'foo'", *ELEMENTWISE_LISTED)),
    ),
    (
        "broadcast_shapes-non-elementwise-mode",
        Bad(
            lambda: bcast.broadcast_shapes((3,), (2, 3), mode="explicit"), BE, also=(r"'explicit'", *ELEMENTWISE_LISTED)
        ),
    ),
    (
        "elementwise_plan-mode-None",
        Bad(lambda: bcast.elementwise_plan((3,), (2, 3), mode=None), TE, also=(r"string", *ELEMENTWISE_LISTED)),
    ),
    (
        "broadcast_shapes-numpy-given-axis",
        Bad(
            lambda: bcast.broadcast_shapes((3,), (2, 3), axis=1),
            TE,
            "numpy",
            accepted=r"belongs to modes 'pdpd' and 'legacy'",
        ),
    ),
    (
        "broadcast_shapes-none-given-axis",
        Bad(lambda: bcast.broadcast_shapes((3,), (3,), mode="none", axis=0), TE, "none", accepted=r"'pdpd'"),
    ),
    (
        "broadcast_shapes-pdpd-three-shapes",
        Bad(lambda: bcast.broadcast_shapes((2, 3), (3,), (3,), mode="pdpd"), TE, "pdpd", also=(r"2 shapes", r"got 3")),
    ),
    (
        "elementwise_plan-none-three-shapes",
        Bad(lambda: bcast.elementwise_plan((3,), (3,), (3,), mode="none"), TE, "none", also=(r"2 shapes", r"got 3")),
    ),
    (
        "elementwise_plan-pdpd-no-shapes",
        Bad(lambda: bcast.elementwise_plan(mode="pdpd"), TE, "pdpd", also=(r"2 shapes", r"got 0")),
    ),
    (
        "broadcast_shapes-bidirectional-three-shapes",
        Bad(
            lambda: bcast.broadcast_shapes((3,), (3,), (3,), mode="bidirectional"),
            TE,
            "bidirectional",
            also=(r"2 shapes", r"got 3"),
        ),
    ),
    (
        "broadcast_to-copy-int",
        Bad(lambda: bcast.broadcast_to(X3, (2, 3), copy=1), TE, also=(r"copy", r"True or False")),
    ),
    ("broadcast_to-copy-str", Bad(lambda: bcast.broadcast_to(X3, (2, 3), copy="yes"), TE, also=(r"copy", r"'yes'"))),
)


@pytest.mark.parametrize("case", MODE_ERRORS)
def test_mode_and_argument_errors(case: Bad) -> None:
    expect(case)


# --------------------------------------------------------------------------------------
# Each mode's rules: the clash, its output axis, both dims, and what is accepted.
# --------------------------------------------------------------------------------------
def _explicit(data: Any, target: Any, axes: Any) -> Callable[[], object]:
    return lambda: bcast.infer(data, target, "explicit", axes_mapping=axes)


def _pdpd(b: Any, a: Any, axis: Any = -1) -> Callable[[], object]:
    return lambda: bcast.infer(b, a, "pdpd", axis=axis)


def _axes(data: Any, target: Any, axes: Any) -> Callable[[], object]:
    return lambda: bcast.infer(data, target, "axes", broadcast_axes=axes)


RULE_VIOLATIONS = cases(
    # numpy, one-directional: data -> target
    (
        "numpy-clash",
        Bad(lambda: bcast.infer((2, 3), (4, 5)), BE, "numpy", ("(2, 3)", "(4, 5)"), 0, ("2", "4"), r"\b1 or 4\b"),
    ),
    (
        "numpy-clash-strings-verbatim",
        Bad(lambda: bcast.infer("[2,3]", "[2,5]"), BE, "numpy", ("[2,3]", "[2,5]"), 1, ("3", "5"), r"\b1 or 5\b"),
    ),
    (
        "numpy-clash-lists",
        Bad(lambda: bcast.infer([2, 3], [2, 5]), BE, "numpy", ("[2, 3]", "[2, 5]"), 1, ("3", "5"), r"\b1 or 5\b"),
    ),
    (
        "numpy-clash-at-output-axis-not-data-axis",
        Bad(lambda: bcast.infer((3, 1), (2, 4, 6)), BE, "numpy", ("(3, 1)", "(2, 4, 6)"), 1, ("3", "4"), r"1 or 4"),
    ),
    (
        "numpy-target-1-is-not-stretched",
        Bad(lambda: bcast.infer((3,), (2, 1)), BE, "numpy", ("(3,)", "(2, 1)"), 1, ("3", "1"), r"\b1\b"),
    ),
    (
        "numpy-data-rank-above-target",
        Bad(lambda: bcast.infer((1, 2, 3), (2, 3)), BE, "numpy", ("(1, 2, 3)", "(2, 3)"), accepted=r"rank at most 2"),
    ),
    (
        "numpy-interval-clash",
        Bad(lambda: bcast.infer("[2..3]", "[5..6]"), BE, "numpy", ("[2..3]", "[5..6]"), 0, ("2..3", "5..6"), r"5\.\.6"),
    ),
    # bidirectional
    (
        "bidirectional-clash",
        Bad(
            lambda: bcast.infer((2, 3), (4, 3), "bidirectional"),
            BE,
            "bidirectional",
            ("(2, 3)", "(4, 3)"),
            0,
            ("2", "4"),
            r"equal",
        ),
    ),
    (
        "bidirectional-clash-at-output-axis",
        Bad(
            lambda: bcast.infer((3, 1), (2, 4, 6), "bidirectional"),
            BE,
            "bidirectional",
            ("(3, 1)", "(2, 4, 6)"),
            1,
            ("3", "4"),
            r"equal",
        ),
    ),
    (
        "expand-clash",
        Bad(lambda: bcast.expand(np.zeros((2,)), (3,)), BE, "bidirectional", ("(2,)", "(3,)"), 0, ("2", "3"), r"equal"),
    ),
    # explicit: axes_mapping
    (
        "explicit-clash",
        Bad(_explicit((2,), (2, 3), [1]), BE, "explicit", ("(2,)", "(2, 3)"), 1, ("2", "3"), r"1 or 3"),
    ),
    (
        "explicit-too-many-axes",
        Bad(
            _explicit((3,), (2, 3), [0, 1]),
            BE,
            "explicit",
            ("(3,)", "(2, 3)"),
            accepted=r"one output axis per data axis",
        ),
    ),
    (
        "explicit-too-few-axes",
        Bad(_explicit((2, 3), (2, 3, 4), [0]), BE, "explicit", ("(2, 3)", "(2, 3, 4)"), accepted=r"\b2\b.*axes"),
    ),
    (
        "explicit-empty-axes",
        Bad(_explicit((3,), (2, 3), []), BE, "explicit", ("(3,)", "(2, 3)"), accepted=r"one output axis per data axis"),
    ),
    (
        "explicit-unsorted",
        Bad(_explicit((3, 2), (3, 2, 4), [1, 0]), BE, "explicit", ("(3, 2)", "(3, 2, 4)"), 0, accepted=r"increasing"),
    ),
    (
        "explicit-duplicate",
        Bad(_explicit((3, 3), (2, 3, 4), [1, 1]), BE, "explicit", ("(3, 3)", "(2, 3, 4)"), 1, accepted=r"once"),
    ),
    (
        "explicit-unsorted-and-duplicate-accepted-is-valid",
        Bad(
            _explicit((3, 3, 3), (3, 3, 3), [2, 1, 2]),
            BE,
            "explicit",
            ("(3, 3, 3)",),
            accepted=r"increasing|once",
            never=(r"\[1, 2, 2\]",),  # a suggestion that is itself a duplicate is no help
        ),
    ),
    (
        "explicit-negative",
        Bad(_explicit((3,), (2, 3), [-1]), BE, "explicit", ("(3,)", "(2, 3)"), accepted=r"0\.\.1", also=(r"-1",)),
    ),
    (
        "explicit-huge-negative",
        Bad(_explicit((3,), (2, 3), [-(2**100)]), BE, "explicit", ("(3,)", "(2, 3)"), accepted=r"0\.\.1"),
    ),
    (
        "explicit-out-of-range",
        Bad(_explicit((3,), (2, 3), [2]), BE, "explicit", ("(3,)", "(2, 3)"), 2, accepted=r"0\.\.1"),
    ),
    (
        "explicit-huge-axis",
        Bad(_explicit((3,), (2, 3), [2**100]), BE, "explicit", ("(3,)", "(2, 3)"), accepted=r"0\.\.1"),
    ),
    (
        "explicit-scalar-target",
        Bad(_explicit((3,), (), [0]), BE, "explicit", ("(3,)", "()"), 0, accepted=r"scalar"),
    ),
    (
        "explicit-numpy-array-out-of-range",
        Bad(_explicit((3,), (2, 3), np.array([5])), BE, "explicit", ("(3,)", "(2, 3)"), 5, accepted=r"0\.\.1"),
    ),
    ("explicit-axis-float", Bad(_explicit((3,), (2, 3), [1.0]), TE, "explicit", accepted=INTEGER, also=(r"1\.0",))),
    ("explicit-axis-str", Bad(_explicit((3,), (2, 3), ["1"]), TE, "explicit", accepted=INTEGER, also=(r"'1'",))),
    ("explicit-axis-None", Bad(_explicit((3,), (2, 3), [None]), TE, "explicit", accepted=INTEGER, also=(r"None",))),
    ("explicit-axis-bool", Bad(_explicit((3,), (2, 3), [True]), TE, "explicit", accepted=INTEGER, also=(r"True",))),
    ("explicit-axis-nested", Bad(_explicit((3,), (2, 3), [[1]]), TE, "explicit", accepted=INTEGER)),
    ("explicit-axes-str", Bad(_explicit((3,), (2, 3), "1"), TE, "explicit", accepted=r"list or tuple")),
    ("explicit-axes-set", Bad(_explicit((3,), (2, 3), {1}), TE, "explicit", accepted=r"list or tuple")),
    ("explicit-axes-dict", Bad(_explicit((3,), (2, 3), {1: 1}), TE, "explicit", accepted=r"list or tuple")),
    ("explicit-axes-float-array", Bad(_explicit((3,), (2, 3), np.array([1.0])), TE, "explicit", accepted=r"integer")),
    ("explicit-axes-2d-array", Bad(_explicit((3,), (2, 3), np.array([[1]])), TE, "explicit", accepted=r"1-D")),
    # pdpd: the broadcast-rules text, B (data) into A (target)
    (
        "pdpd-rank-B-above-rank-A",
        Bad(_pdpd((2, 3, 4), (3, 4)), BE, "pdpd", ("(2, 3, 4)", "(3, 4)"), accepted=r"rank at most 2"),
    ),
    (
        "pdpd-rank-B-above-rank-A-with-trailing-ones",
        Bad(_pdpd((3, 1, 1), (2, 3), 1), BE, "pdpd", ("(3, 1, 1)", "(2, 3)"), accepted=r"rank at most 2"),
    ),
    ("pdpd-axis-minus-2", Bad(_pdpd((3,), (2, 3), -2), BE, "pdpd", ("(3,)", "(2, 3)"), accepted=r"-1.*>= 0")),
    (
        "pdpd-axis-hugely-negative",
        Bad(_pdpd((3,), (2, 3), -(2**100)), BE, "pdpd", ("(3,)", "(2, 3)"), accepted=r"-1.*>= 0"),
    ),
    (
        "pdpd-B-runs-past-A",
        Bad(_pdpd((3, 4), (2, 3, 4), 2), BE, "pdpd", ("(3, 4)", "(2, 3, 4)"), accepted=r"0 to 1", also=(r"past",)),
    ),
    (
        "pdpd-B-without-trailing-ones-runs-past-A",
        Bad(_pdpd((3, 1), (2, 3), 2), BE, "pdpd", ("(3, 1)", "(2, 3)"), accepted=r"0 to 1", also=(r"trailing 1",)),
    ),
    ("pdpd-huge-axis", Bad(_pdpd((3,), (2, 3), 2**100), BE, "pdpd", ("(3,)", "(2, 3)"), accepted=r"0 to 1")),
    (
        "pdpd-spec-example-only-B-to-A",
        Bad(
            _pdpd((7, 1, 5), (8, 1, 6, 1), 1),
            BE,
            "pdpd",
            ("(7, 1, 5)", "(8, 1, 6, 1)"),
            1,
            ("7", "1"),
            r"B (in)?to A only|only B (in)?to A",
        ),
    ),
    (
        "pdpd-A-dim-1-is-not-stretched",
        Bad(_pdpd((3,), (2, 1)), BE, "pdpd", ("(3,)", "(2, 1)"), 1, ("3", "1"), r"B (in)?to A only|only B (in)?to A"),
    ),
    (
        "pdpd-B-dim-neither-1-nor-equal",
        Bad(_pdpd((3, 5), (2, 3, 4, 5), 1), BE, "pdpd", ("(3, 5)", "(2, 3, 4, 5)"), 2, ("5", "4"), r"\b1 or 4\b"),
    ),
    (
        "broadcast_shapes-pdpd-only-B-to-A",
        Bad(
            lambda: bcast.broadcast_shapes((8, 1, 6, 1), (7, 1, 5), mode="pdpd", axis=1),
            BE,
            "pdpd",
            ("(7, 1, 5)", "(8, 1, 6, 1)"),
            1,
            ("7", "1"),
            r"B (in)?to A only|only B (in)?to A",
        ),
    ),
    (
        "broadcast_shapes-pdpd-B-larger-than-A",
        Bad(
            lambda: bcast.broadcast_shapes((3,), (2, 3), mode="pdpd"),
            BE,
            "pdpd",
            ("(3,)", "(2, 3)"),
            accepted=r"rank at most 1",
        ),
    ),
    ("pdpd-axis-float", Bad(_pdpd((3,), (2, 3), 1.0), TE, "pdpd", accepted=INTEGER, also=(r"1\.0",))),
    ("pdpd-axis-str", Bad(_pdpd((3,), (2, 3), "1"), TE, "pdpd", accepted=INTEGER, also=(r"'1'",))),
    ("pdpd-axis-None", Bad(_pdpd((3,), (2, 3), None), TE, "pdpd", accepted=INTEGER, also=(r"None",))),
    ("pdpd-axis-bool", Bad(_pdpd((3,), (2, 3), True), TE, "pdpd", accepted=INTEGER, also=(r"True",))),
    (
        "elementwise_plan-pdpd-axis-float",
        Bad(lambda: bcast.elementwise_plan((2, 3), (3,), mode="pdpd", axis=0.5), TE, "pdpd", accepted=INTEGER),
    ),
    # axes: nGraph v0 Broadcast, broadcast_axes are the new output axes
    (
        "axes-data-differs-from-target-minus-axes",
        Bad(_axes((3,), (2, 4), [0]), BE, "axes", ("(3,)", "(2, 4)"), 1, ("3", "4"), r"\[4\]"),
    ),
    (
        "axes-never-stretches-a-1",
        Bad(_axes((1,), (2, 4), [0]), BE, "axes", ("(1,)", "(2, 4)"), 1, ("1", "4"), r"\[4\]", also=(r"stretch",)),
    ),
    (
        "axes-rank-mismatch",
        Bad(_axes((2, 4), (2, 4), [0]), BE, "axes", ("(2, 4)", "(2, 4)"), accepted=r"data of shape \[4\]"),
    ),
    ("axes-out-of-range", Bad(_axes((2, 4), (2, 4), [2]), BE, "axes", ("(2, 4)",), 2, accepted=r"0\.\.1")),
    ("axes-huge", Bad(_axes((3,), (2, 3), [2**64]), BE, "axes", ("(3,)", "(2, 3)"), accepted=r"0\.\.1")),
    # broadcast_axes is nGraph's AxisSet: a repeated axis counts once, the order does not matter
    (
        "axes-duplicate",
        Bad(_axes((4,), (2, 3, 4), [0, 0]), BE, "axes", ("(4,)", "(2, 3, 4)"), accepted=r"data of shape \[3,4\]"),
    ),
    (
        "axes-unsorted",
        Bad(_axes((3,), (2, 3, 4), [1, 0]), BE, "axes", ("(3,)", "(2, 3, 4)"), 2, accepted=r"data of shape \[4\]"),
    ),
    ("axes-negative", Bad(_axes((3, 4), (2, 3, 4), [-3]), BE, "axes", ("(3, 4)", "(2, 3, 4)"), accepted=r"0\.\.2")),
    ("axes-scalar-target", Bad(_axes((3,), (), [0]), BE, "axes", ("(3,)", "()"), 0, accepted=r"scalar")),
    ("axes-axis-float", Bad(_axes((3,), (2, 3), [0.0]), TE, "axes", accepted=INTEGER, also=(r"0\.0",))),
    ("axes-axes-str", Bad(_axes((3,), (2, 3), "0"), TE, "axes", accepted=r"list or tuple")),
    # like: nGraph BroadcastLike
    (
        "like-1-to-N",
        Bad(
            lambda: bcast.infer((1, 3), (4, 3), "like"),
            BE,
            "like",
            ("(1, 3)", "(4, 3)"),
            0,
            ("1", "4"),
            r".",
            also=(r"numpy",),  # the mode that does stretch a 1
        ),
    ),
    (
        "broadcast_like-1-to-N",
        Bad(
            lambda: bcast.broadcast_like(np.zeros((1, 3)), (4, 3)),
            BE,
            "like",
            ("(1, 3)", "(4, 3)"),
            0,
            ("1", "4"),
            r".",
        ),
    ),
    (
        "like-clash",
        Bad(
            lambda: bcast.infer((2, 3), (4, 3), "like"),
            BE,
            "like",
            ("(2, 3)", "(4, 3)"),
            0,
            ("2", "4"),
            r"\b4\b",
            never=(r"mode 'axes'",),  # the user asked for mode 'like'
        ),
    ),
    (
        "like-1-under-a-symbol",
        Bad(lambda: bcast.infer((1, 5), "[N,5]", "like"), BE, "like", ("(1, 5)", "[N,5]"), 0, ("1", "N"), r"static"),
    ),
    (
        "broadcast_like-initial-out-of-range",
        Bad(
            lambda: bcast.broadcast_like(X3, (4, 3), initial_broadcast_axes=[5]),
            BE,
            "like",
            ("(3,)", "(4, 3)"),
            5,
            accepted=r"0\.\.1",
        ),
    ),
    (
        "broadcast_like-initial-duplicate",
        Bad(
            lambda: bcast.broadcast_like(X3, (4, 4, 3), initial_broadcast_axes=[0, 0]),  # an AxisSet: 0 once
            BE,
            "like",
            ("(3,)", "(4, 4, 3)"),
            accepted=r"data of shape \[4,3\]",
        ),
    ),
    (
        "broadcast_like-initial-str",
        Bad(lambda: bcast.broadcast_like(X3, (4, 3), initial_broadcast_axes="0"), TE, "like", accepted=r"list"),
    ),
    # none: no broadcasting at all
    (
        "none-ranks-differ",
        Bad(lambda: bcast.infer((3,), (2, 3), "none"), BE, "none", ("(3,)", "(2, 3)"), accepted=r"exactly"),
    ),
    (
        "none-dims-differ",
        Bad(lambda: bcast.infer((2, 4), (2, 3), "none"), BE, "none", ("(2, 4)", "(2, 3)"), 1, ("4", "3"), r"same"),
    ),
    (
        "none-1-is-not-stretched",
        Bad(lambda: bcast.infer((2, 1), (2, 3), "none"), BE, "none", ("(2, 1)", "(2, 3)"), 1, ("1", "3"), r"same"),
    ),
    (
        "broadcast_shapes-none-dims-differ",
        Bad(
            lambda: bcast.broadcast_shapes((2, 3), (2, 4), mode="none"),
            BE,
            "none",
            ("(2, 3)", "(2, 4)"),
            1,
            accepted=r"same",
        ),
    ),
    (
        "broadcast_shapes-none-ranks-differ",
        Bad(
            lambda: bcast.broadcast_shapes((3,), (2, 3), mode="none"),
            BE,
            "none",
            ("(3,)", "(2, 3)"),
            accepted=r"exactly",
        ),
    ),
    # numpy multidirectional (broadcast_shapes, elementwise_plan)
    (
        "broadcast_shapes-numpy-clash",
        Bad(
            lambda: bcast.broadcast_shapes((2, 3), (4, 3), (5,)),
            BE,
            "numpy",
            ("(2, 3)", "(4, 3)"),
            0,
            ("2", "4"),
            r"equal",
        ),
    ),
    (
        "broadcast_shapes-numpy-clash-strings",
        Bad(lambda: bcast.broadcast_shapes("[3]", "[2,4]"), BE, "numpy", ("[3]", "[2,4]"), 1, ("3", "4"), r"equal"),
    ),
    (
        "elementwise_plan-numpy-clash",
        Bad(lambda: bcast.elementwise_plan((2, 1), (3, 5, 4)), BE, "numpy", ("(2, 1)", "(3, 5, 4)"), 1, ("2", "5")),
    ),
    (
        "broadcast_shapes-numpy-clash-names-the-operand-of-each-dim",
        Bad(
            lambda: bcast.broadcast_shapes("[N]", "[5]", "[6]"),
            BE,
            "numpy",
            ("[5]", "[6]"),
            0,
            ("5", "6"),
            r"equal",
            also=(r"dim 5 of operand 1 \(\[5\]\)", r"dim 6 of operand 2 \(\[6\]\)"),
        ),
    ),
    # unbroadcast: the operand's shape and the gradient's
    (
        "unbroadcast-clash",
        Bad(
            lambda: bcast.unbroadcast(np.ones((2, 3)), (4,)),
            BE,
            "numpy",
            ("(4,)", "(2, 3)"),
            1,
            ("4", "3"),
            r"1 or 3",
        ),
    ),
    (
        "unbroadcast-rank",
        Bad(lambda: bcast.unbroadcast(np.ones(3), (2, 3)), BE, "numpy", ("(2, 3)",), accepted=r"rank at most 1"),
    ),
    ("unbroadcast-symbolic", Bad(lambda: bcast.unbroadcast(np.ones(3), "[N]"), BE, shapes=("[N]",), also=(r"static",))),
)


@pytest.mark.parametrize("case", RULE_VIOLATIONS)
def test_rule_violations(case: Bad) -> None:
    expect(case)


# --------------------------------------------------------------------------------------
# Symbolic contradictions: no value of a symbol satisfies every axis.
# --------------------------------------------------------------------------------------
CONTRADICTIONS = cases(
    ("numpy-data-4-5-into-N-N", Bad(lambda: bcast.infer("[4,5]", "[N,N]"), BE, "numpy", ("[4,5]", "[N,N]"))),
    ("numpy-tuple-into-N-N", Bad(lambda: bcast.infer((4, 5), "[N,N]"), BE, "numpy", ("(4, 5)", "[N,N]"))),
    (
        "explicit",
        Bad(lambda: bcast.infer((4, 5), "[N,N,3]", "explicit", axes_mapping=[0, 1]), BE, "explicit", ("[N,N,3]",)),
    ),
    ("pdpd", Bad(lambda: bcast.infer((4, 5), "[N,N]", "pdpd"), BE, "pdpd", ("(4, 5)", "[N,N]"))),
    ("none", Bad(lambda: bcast.infer("[N,N]", (4, 5), "none"), BE, "none", ("[N,N]", "(4, 5)"))),
    ("axes", Bad(lambda: bcast.infer((4, 5), "[N,N,3]", "axes", broadcast_axes=[2]), BE, "axes", ("[N,N,3]",))),
    ("like", Bad(lambda: bcast.infer((4, 5), "[N,N]", "like"), BE, "like", ("(4, 5)", "[N,N]"))),
    (
        "broadcast_to-view",
        Bad(lambda: bcast.broadcast_to(np.zeros((4, 5)), "[N,N]"), BE, "numpy", ("(4, 5)", "[N,N]")),
    ),
)


@pytest.mark.parametrize("case", CONTRADICTIONS)
def test_symbolic_contradictions(case: Bad) -> None:
    err = expect(case)
    assert isinstance(err, BroadcastError)
    msg = str(err)
    # N would have to be 4 at output axis 0 and 5 at output axis 1
    assert "N" in err.dims, f".dims {err.dims!r} does not name the symbol: {msg}"
    assert err.axis in (0, 1)
    for needed in (r"\bN\b", r"\b4\b", r"\b5\b", r"axis 0\b", r"axis 1\b"):
        assert re.search(needed, msg), f"the message lacks {needed!r}: {msg}"


def test_a_contradiction_says_what_would_be_accepted() -> None:
    with pytest.raises(BroadcastError) as info:
        bcast.infer("[4,5]", "[N,N]")
    assert info.value.accepted, f"no .accepted: {info.value}"
    assert re.search(r"accepted", str(info.value)), f"the message does not say what would be accepted: {info.value}"


def test_a_symbol_that_may_be_1_is_no_contradiction() -> None:
    """The contrast: data [N,N] into [4,5] holds with N = 1 (so the checks above are not vacuous)."""
    assert bcast.infer("[N,N]", (4, 5)) == (4, 5)


# --------------------------------------------------------------------------------------
# Plan methods: specialize, bind, backward, and calling a plan with the wrong array.
# --------------------------------------------------------------------------------------
P = bcast.plan((3, 1), (2, 3, 4))
P_SYM = bcast.plan("[N,1]", "[N,4]")

PLAN_METHODS = cases(
    (
        "specialize-wrong-dim",
        Bad(lambda: P.specialize((4, 1)), BE, "numpy", ("[3,1]",), 0, ("3", "4"), also=(r"\[4,1\]|\(4, 1\)",)),
    ),
    ("specialize-wrong-rank", Bad(lambda: P.specialize((3,)), BE, "numpy", also=(r"rank 2", r"rank 1"))),
    ("specialize-None", Bad(lambda: P.specialize(None), TE, accepted=r"tuple|sequence")),
    ("specialize-negative", Bad(lambda: P.specialize((-3, 1)), BE, "numpy", accepted=NEGATIVE)),
    ("specialize-dynamic", Bad(lambda: P_SYM.specialize("[?,1]"), BE, "numpy", also=(r"concrete",))),
    (
        "specialize-symbol-two-sizes",
        Bad(lambda: bcast.plan("[N,N]", "[?,?]").specialize((3, 4)), BE, "numpy", axis=1, also=(r"\b3\b", r"\b4\b")),
    ),
    (
        "specialize-outside-interval",
        Bad(lambda: bcast.plan("[2..3,1]", "[?,4]").specialize((5, 1)), BE, "numpy", axis=0, dims=("2..3", "5")),
    ),
    (
        "specialize-binds-into-a-clash",
        Bad(lambda: bcast.plan("[N,1]", "[5,4]").specialize((3, 1)), BE, "numpy", axis=0, dims=("3", "5")),
    ),
    (
        "bind-into-a-clash",
        Bad(lambda: bcast.plan("[N,1]", "[5,4]").bind({"N": 3}), BE, "numpy", ("[5,4]",), 0, ("3", "5"), r"1 or 5"),
    ),
    ("bind-str-size", Bad(lambda: P_SYM.bind({"N": "3"}), TE, also=(r"\bN\b", r"'3'"), accepted=INTEGER)),
    ("bind-bool-size", Bad(lambda: P_SYM.bind({"N": True}), TE, also=(r"\bN\b",), accepted=INTEGER)),
    ("bind-float-size", Bad(lambda: P_SYM.bind({"N": 3.0}), TE, also=(r"\bN\b",), accepted=INTEGER)),
    ("bind-non-str-name", Bad(lambda: P_SYM.bind({1: 3}), TE, also=(r"string",))),
    ("bind-negative-size", Bad(lambda: P_SYM.bind({"N": -3}), BE, "numpy", accepted=NEGATIVE, also=(r"\bN\b",))),
    ("bind-huge-size", Bad(lambda: P_SYM.bind({"N": 2**70}), BE, "numpy", accepted=TOO_BIG, also=(r"\bN\b",))),
    ("bind-list", Bad(lambda: P_SYM.bind([("N", 3)]), TE, also=(r"dict|mapping",))),
    ("bind-None", Bad(lambda: P_SYM.bind(None), TE, also=(r"dict|mapping",))),
    ("backward-wrong-shape", Bad(lambda: P.backward(np.ones((2, 3))), BE, "numpy", also=(r"\[2,3\]|\(2, 3\)",))),
    ("backward-symbolic-plan", Bad(lambda: P_SYM.backward(np.ones((3, 4))), BE, "numpy", also=(r"specialize",))),
    ("backward-strings", Bad(lambda: P.backward(np.full((2, 3, 4), "a")), TE, also=(r"numeric",))),
    ("call-wrong-shape", Bad(lambda: P(np.zeros((5, 1))), BE, "numpy", ("[3,1]",), 0, ("3", "5"))),
    ("call-wrong-rank", Bad(lambda: P(np.zeros(3)), BE, "numpy", also=(r"rank 2", r"rank 1"))),
    ("materialize-wrong-shape", Bad(lambda: P.materialize(np.zeros((3, 2))), BE, "numpy", axis=1, dims=("1", "2"))),
    ("call-symbolic-target", Bad(lambda: bcast.broadcast_to(X3, "[N,3]"), BE, "numpy", ("[N,3]",), 0, ("N",))),
    ("call-dynamic-target", Bad(lambda: bcast.broadcast_to(X3, "[?,3]"), BE, "numpy", ("[?,3]",), 0, ("?",))),
)


@pytest.mark.parametrize("case", PLAN_METHODS)
def test_plan_methods_reject_bad_input(case: Bad) -> None:
    expect(case)


# --------------------------------------------------------------------------------------
# Non-array inputs to the functions that take arrays.
# --------------------------------------------------------------------------------------
P2 = bcast.plan((2,), (2, 2))


def _nested(depth: int) -> list[Any]:
    """[[[...[1]...]]]: deeper than the 64 dimensions an array may have."""
    x: list[Any] = [1]
    for _ in range(depth - 1):
        x = [x]
    return x


ARRAY_TAKERS: dict[str, Callable[[Any], object]] = {
    "broadcast_to": lambda x: bcast.broadcast_to(x, (2, 2)),
    "broadcast_to-copy": lambda x: bcast.broadcast_to(x, (2, 2), copy=True),
    "expand": lambda x: bcast.expand(x, (2, 2)),
    "broadcast_like": lambda x: bcast.broadcast_like(x, (2, 2)),
    "plan-call": lambda x: P2(x),
    "plan.materialize": lambda x: P2.materialize(x),
    "plan.backward": lambda x: P2.backward(x),
    "unbroadcast": lambda x: bcast.unbroadcast(x, (2,)),
}
NON_ARRAYS: dict[str, tuple[Callable[[], object], str]] = {
    "dict": (lambda: {1: 2}, r"dict"),
    "set": (lambda: {1, 2}, r"set"),
    "None": (lambda: None, r"None"),
    "object": (lambda: object(), r"object"),
    "generator": (lambda: (i for i in range(2)), r"generator"),
    "ragged-list": (lambda: [[1, 2], [3]], r"array"),
    "ragged-deep": (lambda: [[[1], [2, 3]]], r"array"),
    "too-deep-list": (lambda: _nested(100), r"array"),
}


@pytest.mark.parametrize("taker", list(ARRAY_TAKERS))
@pytest.mark.parametrize("junk", list(NON_ARRAYS))
def test_non_arrays_are_a_type_error(taker: str, junk: str) -> None:
    make, named = NON_ARRAYS[junk]
    x = make()
    before = repr(x) if isinstance(x, (list, dict, set)) else None
    with pytest.raises(TypeError, match=named) as info:
        ARRAY_TAKERS[taker](x)
    assert type(info.value) is TypeError
    assert re.search(r"\b(x|dy)\b", str(info.value)), "the message must name the argument"
    if before is not None:
        assert repr(x) == before, "the input was mutated"


# --------------------------------------------------------------------------------------
# Too big: copies beyond addressable memory or available RAM, views beyond intp.
# --------------------------------------------------------------------------------------
def _refused_without_allocating(call: Callable[[], object]) -> BroadcastError:
    """``call`` must raise BroadcastError quickly, allocating next to nothing first."""
    caught: list[BaseException] = []

    def refuse() -> None:
        try:
            call()
        except BaseException as e:
            caught.append(e)

    tracemalloc.start()
    try:
        work = steps(refuse)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught and isinstance(caught[0], BroadcastError), f"not refused: {caught}"
    info = pytest.ExceptionInfo.from_exception(caught[0])
    assert work < REFUSAL_STEPS, f"took {work:,} steps to refuse"
    assert peak < FEW_BYTES, f"allocated {peak} bytes before refusing"
    assert isinstance(info.value, ValueError)
    return info.value


HUGE = (2**40, 2**20)  # 2**60 elements: 8 EiB of float64, more than a 64-bit machine can address

HUGE_COPIES: dict[str, tuple[str, Callable[[], object]]] = {
    "numpy": ("numpy", lambda: bcast.broadcast_to(np.zeros(1), HUGE, copy=True)),
    "bidirectional": ("bidirectional", lambda: bcast.broadcast_to(np.zeros(1), HUGE, "bidirectional", copy=True)),
    "explicit": (
        "explicit",
        lambda: bcast.broadcast_to(np.zeros(1), HUGE, "explicit", axes_mapping=[1], copy=True),
    ),
    "pdpd": ("pdpd", lambda: bcast.broadcast_to(np.zeros(1), HUGE, "pdpd", axis=0, copy=True)),
    "axes": ("axes", lambda: bcast.broadcast_to(np.zeros(8), (2**60, 8), "axes", broadcast_axes=[0], copy=True)),
    "like": ("like", lambda: bcast.broadcast_to(np.zeros(8), (8, 2**60), "like", copy=True)),
    "plan.materialize": ("numpy", lambda: bcast.plan((1,), HUGE).materialize(np.zeros(1))),
    "int8-2**63-bytes": ("numpy", lambda: bcast.broadcast_to(np.zeros(1, np.int8), (2**32, 2**31), copy=True)),
    "zero-size-with-a-huge-dim": ("numpy", lambda: bcast.broadcast_to(np.zeros(1), (0, 2**62), copy=True)),
}


@pytest.mark.parametrize("name", list(HUGE_COPIES))
def test_a_copy_beyond_addressable_memory_is_refused_before_allocating(name: str) -> None:
    mode, call = HUGE_COPIES[name]
    err = _refused_without_allocating(call)
    msg = str(err)
    assert err.mode == mode
    assert re.search(_word(mode), msg), msg
    assert re.search(r"bytes|address|memory", msg), msg


HUGE_VIEWS: dict[str, tuple[str, Callable[[], object]]] = {
    "broadcast_to-2**80-elements": ("numpy", lambda: bcast.broadcast_to(np.zeros(1), (2**40, 2**40))),
    "broadcast_to-2**63-elements": ("numpy", lambda: bcast.broadcast_to(np.zeros(1, np.int8), (2**32, 2**31))),
    "expand": ("bidirectional", lambda: bcast.expand(np.zeros(1), (2**40, 2**40))),
    "plan-call": ("numpy", lambda: bcast.plan((1,), (2**40, 2**40))(np.zeros(1))),
    "broadcast_like": ("like", lambda: bcast.broadcast_like(np.zeros(1), (1, 2**40, 2**40))),
    "explicit": ("explicit", lambda: bcast.broadcast_to(np.zeros(1), (2**40, 2**40), "explicit", axes_mapping=[0])),
    # fewer elements than intp can index, but more bytes: NumPy cannot make the view either
    "float64-2**63-bytes": ("numpy", lambda: bcast.broadcast_to(np.zeros(1), (2**30, 2**30))),
    "expand-float64-2**63-bytes": ("bidirectional", lambda: bcast.expand(np.zeros(1), (2**30, 2**30))),
    "zero-size-with-a-huge-dim": ("numpy", lambda: bcast.broadcast_to(np.zeros(1), (0, 2**63 - 1))),
}


@pytest.mark.parametrize("name", list(HUGE_VIEWS))
def test_a_view_too_big_to_index_is_a_broadcast_error(name: str) -> None:
    mode, call = HUGE_VIEWS[name]
    err = _refused_without_allocating(call)
    assert err.mode == mode
    assert re.search(_word(mode), str(err)), str(err)


def test_a_view_that_fits_is_made() -> None:
    """The contrast: 2**62 int8 elements are a fine zero-copy view."""
    v = bcast.broadcast_to(np.zeros(1, np.int8), (2**31, 2**31))
    assert v.shape == (2**31, 2**31)
    assert v.strides == (0, 0)


BIG = (1000, 1000)  # 8 MB of float64: addressable, but more than the 1000 bytes we pretend are free

#: mode, the input's shape, and the copy to make of it (all BIG)
RAM_COPIES: dict[str, tuple[str, tuple[int, ...], Callable[[np.ndarray], object]]] = {
    "numpy": ("numpy", (1,), lambda x: bcast.broadcast_to(x, BIG, copy=True)),
    "bidirectional": (
        "bidirectional",
        (1000, 1),
        lambda x: bcast.broadcast_to(x, (1, 1000), "bidirectional", copy=True),
    ),
    "explicit": ("explicit", (1000,), lambda x: bcast.broadcast_to(x, BIG, "explicit", axes_mapping=[0], copy=True)),
    "pdpd": ("pdpd", (1000,), lambda x: bcast.broadcast_to(x, BIG, "pdpd", axis=0, copy=True)),
    "axes": ("axes", (1000,), lambda x: bcast.broadcast_to(x, BIG, "axes", broadcast_axes=[1], copy=True)),
    "like": ("like", (1000,), lambda x: bcast.broadcast_to(x, BIG, "like", copy=True)),
    "none": ("none", BIG, lambda x: bcast.broadcast_to(x, BIG, "none", copy=True)),
    "plan.materialize": ("numpy", (1,), lambda x: bcast.plan((1,), BIG).materialize(x)),
}


@pytest.mark.parametrize("name", list(RAM_COPIES))
def test_a_copy_beyond_available_ram_is_refused_before_allocating(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mode, data_shape, copy = RAM_COPIES[name]
    x = np.zeros(data_shape)  # made before tracing: only what the call allocates counts
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    err = _refused_without_allocating(lambda: copy(x))
    msg = str(err)
    assert err.mode == mode
    assert re.search(_word(mode), msg), msg
    assert re.search(r"available", msg), msg
    np.testing.assert_array_equal(x, 0.0)


def test_tracemalloc_sees_numpy_allocations() -> None:
    """The allocation checks above can fail: a real 8 MB copy shows up in tracemalloc's peak."""
    from bcast.engines.numpy import pool

    pool.clear()  # a recycled buffer of the same size would make the copy allocate nothing
    tracemalloc.start()
    try:
        bcast.broadcast_to(np.zeros(1), BIG, copy=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak >= 8 * 1000 * 1000


def test_the_ram_check_is_what_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contrast: with plenty of RAM (or none known), the same copy is made; into out=, no RAM is needed."""
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 40)
    assert bcast.broadcast_to(np.zeros(1), BIG, copy=True).shape == BIG
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    assert bcast.broadcast_to(np.zeros(1), BIG, copy=True).shape == BIG
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    out = np.empty(BIG)
    assert bcast.plan((1,), BIG).materialize(np.ones(1), out=out) is out
    assert (out == 1).all()


SIZE_REFUSALS: dict[str, tuple[Callable[[], object], tuple[str, ...]]] = {
    "copy-beyond-addressable": (
        lambda: bcast.broadcast_to(np.zeros(1), HUGE, copy=True),
        ("(1,)", f"({2**40}, {2**20})"),
    ),
    "view-beyond-intp": (lambda: bcast.broadcast_to(np.zeros(1), (2**40, 2**40)), (f"({2**40}, {2**40})",)),
    "copy-beyond-ram": (lambda: bcast.broadcast_to(np.zeros(1), [1000, 1000], copy=True), ("[1000, 1000]",)),
}


@pytest.mark.parametrize("name", list(SIZE_REFUSALS))
def test_size_refusals_name_the_shapes_as_given(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    pool.clear()  # a pooled buffer of the size would be reused: no new memory, nothing to refuse
    call, given_shapes = SIZE_REFUSALS[name]
    with pytest.raises(BroadcastError) as info:
        call()
    for shape in given_shapes:
        assert shape in str(info.value), f"the message does not show {shape} as given: {info.value}"
        assert shape in info.value.shapes, f".shapes {info.value.shapes!r} lacks {shape!r}"


# --------------------------------------------------------------------------------------
# out=: type, shape, dtype, writability, overlap; refused writes leave everything as it was.
# --------------------------------------------------------------------------------------
#: For each mode, a plan and an input of the plan's data shape; every output is (2, 3, 4).
MODE_PLANS: dict[str, tuple[Callable[[], bcast.Plan], tuple[int, ...]]] = {
    "numpy": (lambda: bcast.plan((3, 1), (2, 3, 4)), (3, 1)),
    "bidirectional": (lambda: bcast.plan((3, 1), (2, 1, 4), "bidirectional"), (3, 1)),
    "explicit": (lambda: bcast.plan((3,), (2, 3, 4), "explicit", axes_mapping=[1]), (3,)),
    "pdpd": (lambda: bcast.plan((3, 1), (2, 3, 4), "pdpd", axis=1), (3, 1)),
    "axes": (lambda: bcast.plan((3,), (2, 3, 4), "axes", broadcast_axes=[0, 2]), (3,)),
    "like": (lambda: bcast.plan((2,), (2, 3, 4), "like"), (2,)),
    "none": (lambda: bcast.plan((2, 3, 4), (2, 3, 4), "none"), (2, 3, 4)),
}


def _bad_outs() -> dict[str, tuple[type[Exception], Callable[[], Any], str]]:
    def read_only() -> np.ndarray:
        out = np.full((2, 3, 4), -7.0)
        out.setflags(write=False)
        return out

    return {
        "wrong-shape": (BE, lambda: np.full((2, 3, 5), -7.0), r"\[2,3,5\]|\(2, 3, 5\)"),
        "wrong-rank": (BE, lambda: np.full((24,), -7.0), r"\[24\]|\(24,\)"),
        "wrong-dtype": (TE, lambda: np.full((2, 3, 4), -7, np.float32), r"float32.*float64|float64.*float32"),
        "read-only": (BE, read_only, r"read-only"),
        "read-only-broadcast-view": (BE, lambda: np.broadcast_to(np.full(1, -7.0), (2, 3, 4)), r"read-only"),
        "list": (TE, lambda: [[[0.0] * 4] * 3] * 2, r"NumPy array"),
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", list(_bad_outs()))
def test_out_is_checked(mode: str, bad: str) -> None:
    make_plan, data_shape = MODE_PLANS[mode]
    p = make_plan()
    x = np.arange(float(np.prod(data_shape))).reshape(data_shape)
    x_before = x.copy()
    exc, make_out, named = _bad_outs()[bad]
    out = make_out()
    out_before = np.array(out)
    with pytest.raises(exc) as info:
        p.materialize(x, out=out)
    err = info.value
    msg = str(err)
    assert type(err) is exc, msg
    assert re.search(named, msg), msg
    assert re.search(_word(mode), msg), f"the message does not name the mode {mode!r}: {msg}"
    if isinstance(err, BroadcastError):
        assert err.mode == mode
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(np.array(out), out_before)
    assert x.flags.writeable


@pytest.mark.parametrize("mode", MODES)
def test_a_good_out_is_filled(mode: str) -> None:
    """The contrast: a fresh out of the right shape and dtype is written, and returned."""
    make_plan, data_shape = MODE_PLANS[mode]
    p = make_plan()
    x = np.arange(float(np.prod(data_shape))).reshape(data_shape)
    out = np.full((2, 3, 4), -7.0)
    assert p.materialize(x, out=out) is out
    np.testing.assert_array_equal(out, p(x))


def _overlaps() -> dict[str, Callable[[], tuple[bcast.Plan, np.ndarray, np.ndarray]]]:
    def prefix() -> tuple[bcast.Plan, np.ndarray, np.ndarray]:
        buf = np.arange(8.0)
        return bcast.plan((4,), (2, 4)), buf[:4], buf.reshape(2, 4)

    def suffix() -> tuple[bcast.Plan, np.ndarray, np.ndarray]:
        buf = np.arange(8.0)
        return bcast.plan((4,), (2, 4)), buf[4:], buf.reshape(2, 4)

    def same() -> tuple[bcast.Plan, np.ndarray, np.ndarray]:
        buf = np.arange(4.0)
        return bcast.plan((4,), (4,), "none"), buf, buf

    def strided() -> tuple[bcast.Plan, np.ndarray, np.ndarray]:
        buf = np.arange(12.0)
        return (
            bcast.plan((2, 1), (2, 3), "explicit", axes_mapping=[0, 1]),
            buf[::6].reshape(2, 1),
            buf[:6].reshape(2, 3),
        )

    def transposed() -> tuple[bcast.Plan, np.ndarray, np.ndarray]:
        buf = np.arange(6.0).reshape(2, 3)
        return bcast.plan((3, 1), (3, 2), "bidirectional"), buf.T[:, :1], buf.T

    return {"prefix": prefix, "suffix": suffix, "out-is-x": same, "strided": strided, "transposed": transposed}


@pytest.mark.parametrize("name", list(_overlaps()))
def test_out_overlapping_the_input_gives_numpys_answer(name: str) -> None:
    """NumPy's rule for ``out=``: the result is as if the input had been read whole first."""
    p, x, out = _overlaps()[name]()
    expected = np.broadcast_to(p(x.copy()), out.shape).copy()
    assert p.materialize(x, out=out) is out
    np.testing.assert_array_equal(out, expected)


def test_out_beside_the_input_in_one_buffer_is_fine() -> None:
    """The contrast: the same buffer, disjoint halves, is no overlap."""
    buf = np.zeros(12)
    buf[:4] = [1, 2, 3, 4]
    out = buf[4:].reshape(2, 4)
    bcast.plan((4,), (2, 4)).materialize(buf[:4], out=out)
    np.testing.assert_array_equal(buf, [1, 2, 3, 4] * 3)


# --------------------------------------------------------------------------------------
# Inputs are never mutated; views are read-only.
# --------------------------------------------------------------------------------------
def _views() -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    return {
        "broadcast_to-numpy": lambda x: bcast.broadcast_to(x, (2, 3)),
        "broadcast_to-bidirectional": lambda x: bcast.broadcast_to(x, (2, 1), "bidirectional"),
        "broadcast_to-explicit": lambda x: bcast.broadcast_to(x, (2, 3), "explicit", axes_mapping=[1]),
        "broadcast_to-pdpd": lambda x: bcast.broadcast_to(x, (2, 3), "pdpd", axis=1),
        "broadcast_to-axes": lambda x: bcast.broadcast_to(x, (2, 3), "axes", broadcast_axes=[0]),
        "broadcast_to-like": lambda x: bcast.broadcast_to(x, (3, 2), "like"),
        "broadcast_to-none": lambda x: bcast.broadcast_to(x, (3,), "none"),
        "expand": lambda x: bcast.expand(x, (2, 3)),
        "broadcast_like": lambda x: bcast.broadcast_like(x, (3, 2)),
        "plan-call": lambda x: bcast.plan((3,), (2, 3))(x),
    }


@pytest.mark.parametrize("name", list(_views()))
def test_views_are_read_only_and_leave_the_input_writable(name: str) -> None:
    x = np.arange(3.0)
    v = _views()[name](x)
    assert not v.flags.writeable
    with pytest.raises(ValueError, match=r"read-only"):
        v[...] = 9.0
    assert x.flags.writeable
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    x[0] = 5.0  # the input is still the user's to write
    assert v.flat[0] == 5.0  # a view, not a copy
    assert np.shares_memory(v, x)


def _failing_calls_with_inputs() -> dict[str, Callable[[np.ndarray, list[int]], object]]:
    return {
        "broadcast_to-clash": lambda x, axes: bcast.broadcast_to(x, (2, 4)),
        "broadcast_to-copy-clash": lambda x, axes: bcast.broadcast_to(x, (2, 4), copy=True),
        "explicit-unsorted": lambda x, axes: bcast.broadcast_to(x, (3, 3), "explicit", axes_mapping=axes, copy=True),
        # unsorted broadcast_axes are valid (an AxisSet); the target's last dim 4 refuses the data (3,)
        "axes-unsorted": lambda x, axes: bcast.broadcast_to(x, (3, 3, 4), "axes", broadcast_axes=axes),
        "broadcast_like-unsorted": lambda x, axes: bcast.broadcast_like(x, (3, 3, 4), initial_broadcast_axes=axes),
        "materialize-wrong-shape": lambda x, axes: bcast.plan((3,), (2, 3)).materialize(x.reshape(3, 1)),
        "backward-wrong-shape": lambda x, axes: bcast.plan((1,), (3,)).backward(x.reshape(1, 3)),
        "unbroadcast-clash": lambda x, axes: bcast.unbroadcast(x, (2,)),
        "expand-clash": lambda x, axes: bcast.expand(x, (4,)),
    }


@pytest.mark.parametrize("name", list(_failing_calls_with_inputs()))
def test_a_refused_call_mutates_nothing(name: str) -> None:
    x = np.arange(3.0)
    axes = [1, 0]
    with pytest.raises((BroadcastError, TypeError)):
        _failing_calls_with_inputs()[name](x, axes)
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    assert x.flags.writeable
    assert axes == [1, 0], "the axes list was sorted in place"


def test_successful_calls_mutate_nothing() -> None:
    x = np.arange(3.0)
    dy = np.ones((2, 3))
    axes = np.array([1])
    bcast.broadcast_to(x, (2, 3), copy=True)[...] = 9.0
    bcast.broadcast_to(x, (2, 3), "explicit", axes_mapping=axes)
    bcast.plan((3,), (2, 3)).backward(dy)
    bcast.unbroadcast(dy, (3,))
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(dy, np.ones((2, 3)))
    np.testing.assert_array_equal(axes, [1])
    assert x.flags.writeable and dy.flags.writeable and axes.flags.writeable


# --------------------------------------------------------------------------------------
# Random junk: only BroadcastError or TypeError may ever escape.
# --------------------------------------------------------------------------------------
_atoms = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.integers(min_value=-3, max_value=9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=10),
    st.text(alphabet="[](),.?-+0123456789NM_| ", max_size=16),
    st.integers(min_value=0, max_value=2**300).map(lambda n: f"[{n}]"),
    st.binary(max_size=4),
    st.complex_numbers(),
    st.just(...),
    st.builds(object),
)
_junk = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=2),
        st.frozensets(st.integers(min_value=-2, max_value=5), max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_junk, target=_junk, extra=_junk, mode=st.sampled_from([*MODES, "bogus", ""]))
def test_junk_only_ever_raises_broadcast_error_or_type_error(data: Any, target: Any, extra: Any, mode: str) -> None:
    kwargs = {MODE_ARG[mode]: extra} if mode in MODE_ARG else {}
    calls: dict[str, Callable[[], object]] = {
        "Shape(data)": lambda: Shape(data),
        "Dim(data)": lambda: Dim(data),
        "infer(data, target, mode)": lambda: bcast.infer(data, target, mode, **kwargs),
        "infer((3,), (2, 3), mode, junk argument)": lambda: bcast.infer((3,), (2, 3), mode, **kwargs),
        "broadcast_shapes(data, target)": lambda: bcast.broadcast_shapes(data, target),
    }
    for name, call in calls.items():
        try:
            call()
        except (BroadcastError, TypeError):
            pass
        except Exception as e:
            raise AssertionError(f"{name} let {type(e).__name__} escape: {e}") from e


def test_a_huge_message_of_control_characters_is_escaped_and_elided_quickly() -> None:
    """Escaping costs what is shown, not what was given: 10 MB of ESC in every field of an error, with the
    same work as 10 KB and next to no memory (escaping it all would take 40 MB)."""
    from bcast.errors import MESSAGE_BYTES, brief

    def build(bomb: str) -> Callable[[], object]:
        return lambda: (
            BroadcastError("head " + bomb + " tail", mode=bomb, shapes=[bomb] * 3, dims=[bomb], accepted=bomb),
            brief(bomb),
        )

    bomb = "\x1b" * 10_000_000
    tracemalloc.start()
    try:
        e, q = build(bomb)()  # type: ignore[misc]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(bomb), f"{peak:,} bytes at most while making the error"  # "head " + bomb + " tail": 10 MB
    assert steps(build(bomb)) <= steps(build("\x1b" * 10_000)) + 50
    for text in (str(e), e.mode or "", *e.shapes, *e.dims, e.accepted or "", q):
        assert len(text.encode()) <= MESSAGE_BYTES and "\x1b" not in text
    assert str(e).startswith("head \\x1b") and str(e).endswith("\\x1b tail")
    assert "10,000,010 chars in all" in str(e)
