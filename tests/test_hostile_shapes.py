"""Hostile and careless shapes, dims, modes and axes given to the shape algebra and the public verbs.

The contract: bad input gets a ``BroadcastError`` (a ``ValueError``) or a ``TypeError`` whose
message names what was wrong, with work that does not grow with the size of the garbage, in
bounded memory, the message under 2 KB and free of control characters; good input of any size
up to the caps (``bcast.MAX_RANK`` dims, ``bcast.MAX_DIM`` per dim) is answered with work linear
in its size.

Every attack runs in a child process with a wall-clock timeout and an address-space limit
(``tests/hostile.py``), so a hang or a memory bomb fails one test instead of the run (the
timeout is a guard, never a measure). To keep the number of children small, most children run
a whole table of calls (every hostile value through every verb and mode) and check each call's
outcome inside the child, returning the list of failures; a few headline attacks run alone
through :func:`hostile.assert_refused`. The work a call does is counted in process
(:func:`hostile.steps`: Python lines run and functions called), at two or three sizes.

The classes of hostile input, and the tests that cover each:

1. work that explodes (quadratic formatting, duplicate checks, constraints among many
   symbols): ``test_*_is_linear``, ``test_a_refusal_costs_the_same_*``, ``test_*_at_the_cap``,
   ``test_many_symbols_*``
2. messages that explode (100,000-digit dims, 10 MB modes, nested brackets):
   ``BAD_STRINGS``, ``test_headline_attack``, ``test_messages_quote_values_briefly``
3. iterating without bound (``range(10**20)``, generators, lying ``__len__``, huge arrays):
   ``OVERSIZED``, ``ENDLESS``, ``test_axes_attacks``
4. Shape/Dim/interval from hostile input: ``test_constructors_refuse_cleanly``, ``BAD_DIMS``
5. more than NumPy's 64 dims through the verbs that make arrays: ``test_rank_over_64``
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcast
from bcast import BroadcastError, Dim, Shape
from bcast.dims import given_text, int_text, shape_text

sys.path.insert(0, str(Path(__file__).parent))
from hostile import MESSAGE_BYTES, assert_clean_text, assert_linear, assert_refused, assert_returned, attack, steps

#: A child of many calls still running after this long is killed: a hang. No test measures a time:
#: what a call costs is counted, in process (:func:`test_every_verb_is_linear`,
#: :func:`test_a_refusal_costs_the_same_whatever_the_size_of_what_it_refuses`).
GROUP_S = 120.0

# --------------------------------------------------------------------------------------
# What every child runs first: hostile classes, and `check`, which runs one call, checks its
# outcome against the contract and records what falls short; `report()` is the child's value.
# --------------------------------------------------------------------------------------
PRELUDE = r'''
import itertools
from collections.abc import Sequence as _Sequence
import numpy as np
import bcast
from bcast import BroadcastError, Dim, Shape

class BadIndex:
    def __index__(self): raise RuntimeError("boom \x1b[2J\x07")
class HugeIndex:
    def __index__(self): return 10**100_000
class LyingLen(list):
    def __len__(self): return 2
class LenHuge(_Sequence):
    def __len__(self): return 10**30
    def __getitem__(self, i): return 1
class LenNegative(_Sequence):
    def __len__(self): return -1
    def __getitem__(self, i): return 1
class LenRaises(_Sequence):
    def __len__(self): raise ZeroDivisionError("len \x1b[31m")
    def __getitem__(self, i): return 1
class EndlessSeq(_Sequence):
    def __len__(self): return 2
    def __getitem__(self, i): return 1
class RaisingSeq(_Sequence):
    def __len__(self): return 2
    def __getitem__(self, i): raise KeyError("bad \x00")
class EvilStr(str):
    def strip(self, *a): raise RuntimeError("strip")
    def lower(self): raise RuntimeError("lower")
    def __len__(self): raise RuntimeError("len")
    def __contains__(self, x): raise RuntimeError("contains")
class EvilRepr:
    def __repr__(self): raise RuntimeError("repr")
    def __str__(self): return "x" * 10**7
def nested(depth):
    v = []
    for _ in range(depth):
        v = [v]
    return v

X = np.ones(1)
_FAILS = []
_CALLS = [0]

def _bad_chars(text):
    return sorted({c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})

def check(label, make, call, expect="refused", contains=()):
    """Run call(make()); expect "refused" (BroadcastError/TypeError), "answered", or "either"."""
    _CALLS[0] += 1
    value = make()
    try:
        call(value)
    except BaseException as e:
        names = [c.__name__ for c in type(e).__mro__]
        msg = str(e)
        why = []
        if expect == "answered":
            why.append("refused, expected an answer")
        if "BroadcastError" not in names and "TypeError" not in names:
            why.append("raised " + type(e).__name__)
        if not msg.strip():
            why.append("an empty message")
        size = len(msg.encode("utf-8", "backslashreplace"))
        if size >= MESSAGE_BYTES:
            why.append(f"a message of {size} bytes")
        if _bad_chars(msg):
            why.append(f"control characters {_bad_chars(msg)!r}")
        for s in contains:
            if s.lower() not in msg.lower():
                why.append(f"does not name {s!r}")
        if why:
            _FAILS.append(f"{label}: {'; '.join(why)} [{type(e).__name__}: {msg[:240]!r}]")
    else:
        if expect == "refused":
            _FAILS.append(f"{label}: answered, expected a refusal")

def report():
    return f"{_CALLS[0]} calls: " + ("ok" if not _FAILS else " || ".join(_FAILS[:12]))
'''.replace("MESSAGE_BYTES", repr(MESSAGE_BYTES))


def run_child(body: str, *, timeout: float = GROUP_S) -> str:
    """Run PRELUDE + ``body`` in a limited child; every ``check`` in it must have passed."""
    out = attack(PRELUDE + "\n" + body + "\nreport()", timeout=timeout)
    value = assert_returned(out)
    assert value.endswith(": ok'"), f"{value[:3500]}\nstderr: {out.stderr[-1500:]}"
    return value


# --------------------------------------------------------------------------------------
# Every verb and mode a shape goes through. Each entry: a name and the source of a function
# of the hostile value ``v``. Shapes sit as the data, as the target, or among operands.
# --------------------------------------------------------------------------------------
SHAPE_VERBS: dict[str, str] = {
    "Shape": "lambda v: Shape(v)",
    "infer numpy data": "lambda v: bcast.infer(v, [2])",
    "infer numpy target": "lambda v: bcast.infer([1], v)",
    "infer bidirectional data": "lambda v: bcast.infer(v, [2], 'bidirectional')",
    "infer bidirectional target": "lambda v: bcast.infer([1], v, 'bidirectional')",
    "infer explicit data": "lambda v: bcast.infer(v, [2], 'explicit', axes_mapping=[0])",
    "infer explicit target": "lambda v: bcast.infer([1], v, 'explicit', axes_mapping=[0])",
    "infer pdpd B": "lambda v: bcast.infer(v, [2], 'pdpd')",
    "infer pdpd A": "lambda v: bcast.infer([1], v, 'pdpd', axis=0)",
    "infer legacy B": "lambda v: bcast.infer(v, [2], 'legacy')",
    "infer legacy A": "lambda v: bcast.infer([1], v, 'legacy', axis=0)",
    "infer axes data": "lambda v: bcast.infer(v, [2], 'axes', broadcast_axes=[0])",
    "infer axes target": "lambda v: bcast.infer([], v, 'axes', broadcast_axes=[0])",
    "infer like data": "lambda v: bcast.infer(v, [2], 'like')",
    "infer like target": "lambda v: bcast.infer([1], v, 'like')",
    "infer none data": "lambda v: bcast.infer(v, [2], 'none')",
    "infer none target": "lambda v: bcast.infer([2], v, 'none')",
    "plan": "lambda v: bcast.plan([1], v)",
    "explain": "lambda v: bcast.plan(v, v).explain()",
    "broadcast_shapes numpy": "lambda v: bcast.broadcast_shapes([1], v, [1])",
    "broadcast_shapes bidirectional": "lambda v: bcast.broadcast_shapes(v, [1], mode='bidirectional')",
    "broadcast_shapes pdpd": "lambda v: bcast.broadcast_shapes([2], v, mode='pdpd')",
    "broadcast_shapes legacy": "lambda v: bcast.broadcast_shapes(v, [2], mode='legacy')",
    "broadcast_shapes none": "lambda v: bcast.broadcast_shapes(v, v, mode='none')",
    "elementwise_plan": "lambda v: bcast.elementwise_plan([1], v).explain()",
    "broadcast_to": "lambda v: bcast.broadcast_to(X, v)",
    "broadcast_to copy": "lambda v: bcast.broadcast_to(X, v, copy=True)",
    "broadcast_to explicit": "lambda v: bcast.broadcast_to(X, v, 'explicit', axes_mapping=[0])",
    "expand": "lambda v: bcast.expand(X, v)",
    "broadcast_like": "lambda v: bcast.broadcast_like(X, v)",
    "unbroadcast": "lambda v: bcast.unbroadcast(X, v)",
}

# (label, source of the value, "refused" or "either", what a refusal must name)
Attack = tuple[str, str, str, tuple[str, ...]]

OVERSIZED: list[Attack] = [
    ("list of 100k dims", "[1] * 100_000", "refused", ("100,000", "MAX_RANK")),
    ("tuple of 10**7 dims", "(1,) * 10**7", "refused", ("10,000,000", "MAX_RANK")),
    ("range(10**20)", "range(10**20)", "refused", ("MAX_RANK",)),
    ("range(10**7)", "range(10**7)", "refused", ("10,000,000", "MAX_RANK")),
    ("array of 10**6", "np.ones(10**6, dtype=np.int64)", "refused", ("1,000,000", "MAX_RANK")),
    ("array view of 10**12", "np.broadcast_to(np.int64(1), (10**12,))", "refused", ("MAX_RANK",)),
    ("string of 10**6 dims", "'1,' * 10**6", "refused", ("MAX_RANK",)),
    ("string of 10**6 commas", "'[' + ',' * 10**6 + ']'", "refused", ("MAX_RANK",)),
    ("string of 40k dims", "'[' + ','.join(['1'] * 40_000) + ']'", "refused", ("40,000", "MAX_RANK")),
]

ENDLESS: list[Attack] = [
    ("endless generator", "(i for i in itertools.count())", "refused", ("generator",)),
    ("itertools.count", "itertools.count()", "refused", ("count",)),
    ("list iterator", "iter([1, 2])", "refused", ("iterator",)),
    ("__len__ lies", "LyingLen([1, 2, 3])", "refused", ("len()",)),
    ("__len__ of 10**30", "LenHuge()", "refused", ("MAX_RANK",)),
    ("__len__ negative", "LenNegative()", "refused", ("len()",)),
    ("__len__ raises", "LenRaises()", "refused", ("ZeroDivisionError",)),
    ("endless sequence", "EndlessSeq()", "refused", ("len()",)),
    ("__getitem__ raises", "RaisingSeq()", "refused", ("KeyError",)),
    ("dict", "{2: 3}", "refused", ("dict",)),
    ("set", "{2, 3}", "refused", ("set",)),
    ("None", "None", "refused", ("None",)),
    ("float", "2.0", "refused", ("float",)),
    ("bool", "True", "refused", ("bool",)),
    ("bytes", "b'[2]'", "refused", ("bytes",)),
    ("object", "object()", "refused", ("object",)),
    ("__repr__ raises, __str__ huge", "EvilRepr()", "refused", ("EvilRepr",)),
]

BAD_STRINGS: list[Attack] = [
    ("100k opening brackets", "'[' * 100_000", "refused", ("bracket",)),
    ("100k nested brackets", "'[' * 100_000 + ']' * 100_000", "refused", ("bracket",)),
    ("[...] repeated", "'[...]' * 1000", "refused", ("bracket",)),
    ("100k-digit dim", "'(' + '1' * 100_000 + ')'", "refused", ("too large", "100,000 digits")),
    ("5000-digit dim", "'[' + '9' * 5000 + ']'", "refused", ("too large",)),
    ("100k-digit negative dim", "'[-' + '9' * 100_000 + ']'", "refused", ("negative",)),
    ("100k-digit interval bound", "'[1..' + '9' * 100_000 + ']'", "refused", ("too large",)),
    ("100k digits then junk", "'[' + '1' * 100_000 + 'x]'", "refused", ("cannot read",)),
    ("100k intervals in one dim", "'[' + '1..' * 100_000 + ']'", "refused", ("cannot read",)),
    ("1M-char bad symbol", "'[' + 'A' * 10**6 + '-1]'", "refused", ("cannot read",)),
    ("escape codes", "'[2,' + '\\x1b[2J\\x07' * 1000 + ']'", "refused", ("bracket",)),
    ("NUL and BEL", "'[2,\\x00\\x07]'", "refused", ("cannot read",)),
    ("bidi override", "'[2,\\u202e3]'", "refused", ("cannot read",)),
    ("a str subclass with hostile methods", "EvilStr('[2,-3]')", "refused", ("negative",)),
    # valid, however odd: answered (or refused cleanly by a verb that needs static dims)
    ("100k leading zeros", "'[' + '0' * 100_000 + '5]'", "either", ()),
    ("10 MB symbol", "'x' * 10**7", "either", ()),
    ("10 MB of spaces", "' ' * 10**7", "either", ()),
    ("100k-atom derived symbol", "'[' + 'N|' * 100_000 + 'N]'", "either", ()),
    ("interval padded with 2 MB of spaces", "'[1' + ' ' * 10**6 + '..' + ' ' * 10**6 + '2]'", "either", ()),
]

BAD_DIMS: list[Attack] = [
    ("negative dim", "[-5]", "refused", ("negative",)),
    ("bool dim", "[True]", "refused", ("boolean",)),
    ("numpy bool dim", "[np.bool_(True)]", "refused", ("boolean",)),
    ("fractional dim", "[2.5]", "refused", ("integer",)),
    ("numpy float dim", "[np.float64(3)]", "refused", ("integer",)),
    ("numpy float32 dim", "[np.float32(3)]", "refused", ("integer",)),
    ("nan dim", "[float('nan')]", "refused", ("integer",)),
    ("complex dim", "[2j]", "refused", ("integer",)),
    ("10**30 dim", "[10**30]", "refused", ("larger",)),
    ("100k-digit dim", "[10**100_000]", "refused", ("larger", "digits")),
    ("uint64 max dim", "[np.uint64(2**64 - 1)]", "refused", ("larger",)),
    ("uint64 max array", "np.array([2**64 - 1], dtype=np.uint64)", "refused", ("larger",)),
    ("__index__ raises", "[BadIndex()]", "refused", ("__index__", "RuntimeError")),
    ("__index__ of 100k digits", "[HugeIndex()]", "refused", ("larger",)),
    ("None dim", "[None]", "refused", ("None",)),
    ("string dim", "['3']", "refused", ("string",)),
    ("list 100k deep", "nested(100_000)", "refused", ("integer",)),
    ("object array", "np.array([1, 'a'], dtype=object)", "refused", ("object",)),
    ("2-D array", "np.zeros((300, 300), dtype=np.int64)", "refused", ("2-D",)),
    ("float array", "np.zeros(3)", "refused", ("float64",)),
    ("0-d array", "np.array(5)", "refused", ("0-D",)),
    ("a dim of 100k digits alone", "10**100_000", "refused", ("larger",)),
    ("a negative int alone", "-7", "refused", ("negative",)),
    ("__index__ raises, alone", "BadIndex()", "refused", ("BadIndex",)),
]

TABLES = {"oversized": OVERSIZED, "endless": ENDLESS, "bad strings": BAD_STRINGS, "bad dims": BAD_DIMS}

#: Where a value that is no shape is now read as something else, by design. ``broadcast_like``'s
#: ``like`` may be an array (its shape is taken): any NumPy array but a 1-D integer one, which is
#: a shape. ``broadcast_shapes`` takes the Array API form, ``None`` for a dim of unknown size.
NOW_READ: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    **{
        (label, "broadcast_like"): ("either", ()) for label in ("object array", "2-D array", "float array", "0-d array")
    },
    **{
        ("None dim", verb): ("answered", ())
        for verb in (
            "broadcast_shapes numpy",
            "broadcast_shapes bidirectional",
            "broadcast_shapes pdpd",
            "broadcast_shapes legacy",
            "broadcast_shapes none",
        )
    },
}


def _table_body(
    attacks: list[Attack],
    verbs: dict[str, str],
    names: dict[str, tuple[str, ...]] | None = None,
    part: str = "all",
) -> str:
    """Every attack through every verb; ``names[verb]``, when given, is what that verb's refusals must name.

    ``part``: "sample", a third of the pairs (attack i through verb j where i + j is a multiple of 3: every
    attack through a third of the verbs, every verb given a third of the attacks), "rest" the others.
    """
    lines = []
    for i, (label, value, expect, contains) in enumerate(attacks):
        for j, (verb, fn) in enumerate(verbs.items()):
            if part != "all" and ((i + j) % 3 == 0) != (part == "sample"):
                continue
            want = (names or {}).get(verb, contains)
            now, want = NOW_READ.get((label, verb), (expect, want))
            lines.append(f"check({f'{label} / {verb}'!r}, lambda: {value}, {fn}, {now!r}, {want!r})")
    return "\n".join(lines)


@pytest.mark.parametrize("part", ["sample", pytest.param("rest", marks=pytest.mark.full)])
@pytest.mark.parametrize("table", list(TABLES))
def test_hostile_shapes_through_every_verb(table: str, part: str) -> None:
    """Each hostile shape value, through every verb in every mode (data, target, operand): a third of the
    pairs by default (each value through a third of the verbs, each verb given a third of the values)."""
    run_child(_table_body(TABLES[table], SHAPE_VERBS, part=part))


# --------------------------------------------------------------------------------------
# Modes, axes_mapping / broadcast_axes, axis.
# --------------------------------------------------------------------------------------
MODE_VERBS = {
    "infer": "lambda m: bcast.infer([1], [2], m)",
    "plan": "lambda m: bcast.plan([1], [2], m)",
    "broadcast_shapes": "lambda m: bcast.broadcast_shapes([1], [2], mode=m)",
    "elementwise_plan": "lambda m: bcast.elementwise_plan([1], [2], mode=m)",
    "broadcast_to": "lambda m: bcast.broadcast_to(X, [2], m)",
}
BAD_MODES: list[Attack] = [
    ("10 MB mode", "'x' * 10**7", "refused", ("unknown mode", "chars")),
    ("mode None", "None", "refused", ("mode",)),
    ("mode bytes", "b'numpy'", "refused", ("mode", "bytes")),
    ("mode int", "123", "refused", ("mode", "int")),
    ("mode list", "['numpy']", "refused", ("mode", "list")),
    ("mode with escapes", "'\\x1b[31mnumpy\\x07'", "refused", ("unknown mode",)),
    ("mode padded by 10**6 spaces", "' ' * 10**6 + 'numpy'", "refused", ("unknown mode",)),
    ("mode with a NUL", "'numpy\\x00'", "refused", ("unknown mode",)),
    ("mode of hostile str subclass", "EvilStr('numpy')", "either", ()),
    ("mode with __repr__ raising", "EvilRepr()", "refused", ("mode",)),
]


def test_mode_attacks() -> None:
    run_child(_table_body(BAD_MODES, MODE_VERBS))


AXES_VERBS = {
    "explicit infer": "lambda a: bcast.infer([1], [2], 'explicit', axes_mapping=a)",
    "explicit plan": "lambda a: bcast.plan([1], [2], 'explicit', axes_mapping=a)",
    "explicit broadcast_to": "lambda a: bcast.broadcast_to(X, [2], 'explicit', axes_mapping=a)",
    "axes infer": "lambda a: bcast.infer([], [2], 'axes', broadcast_axes=a)",
    "axes broadcast_to": "lambda a: bcast.broadcast_to(X, [2, 1], 'axes', broadcast_axes=a)",
    "like infer": "lambda a: bcast.infer([], [2], 'like', broadcast_axes=a)",
    "broadcast_like": "lambda a: bcast.broadcast_like(X, [2, 1], initial_broadcast_axes=a)",
    "numpy (takes none)": "lambda a: bcast.infer([1], [2], 'numpy', axes_mapping=a)",
}
BAD_AXES: list[Attack] = [
    ("range(10**20)", "range(10**20)", "refused", ("MAX_RANK",)),
    ("40k axes", "list(range(40_000))", "refused", ("40,000", "MAX_RANK")),
    ("40k zeros", "[0] * 40_000", "refused", ("MAX_RANK",)),
    ("array view of 10**12", "np.broadcast_to(np.int64(0), (10**12,))", "refused", ("MAX_RANK",)),
    ("generator", "(i for i in itertools.count())", "refused", ("generator",)),
    ("float", "[1.0]", "refused", ("integer",)),
    ("bool", "[True]", "refused", ("integer",)),
    ("numpy bool", "[np.bool_(False)]", "refused", ("integer",)),
    ("string", "'0'", "refused", ("list",)),
    ("strings", "['0']", "refused", ("integer",)),
    ("None entry", "[None]", "refused", ("integer",)),
    ("100k-digit axis", "[10**100_000]", "refused", ("digits",)),
    ("-100k-digit axis", "[-10**100_000]", "refused", ("digits",)),
    ("float array", "np.zeros(2)", "refused", ("float64",)),
    ("2-D array", "np.ones((2, 2), dtype=np.int64)", "refused", ("2-D",)),
    ("__index__ raises", "[BadIndex()]", "refused", ("RuntimeError",)),
    ("__index__ of 100k digits", "[HugeIndex()]", "refused", ("digits",)),
    ("__len__ lies", "LyingLen([0, 1, 2])", "refused", ("len()",)),
    ("dict", "{0: 1}", "refused", ("dict",)),
    ("set", "{0}", "refused", ("set",)),
]


def test_axes_attacks() -> None:
    """axes_mapping, broadcast_axes and initial_broadcast_axes: counted before read, each entry checked."""
    run_child(_table_body(BAD_AXES, AXES_VERBS, {"numpy (takes none)": ("takes no axes_mapping",)}))


AXIS_VERBS = {
    "pdpd infer": "lambda a: bcast.infer([3], [2, 3], 'pdpd', axis=a)",
    "legacy infer": "lambda a: bcast.infer([3], [2, 3], 'legacy', axis=a)",
    "pdpd broadcast_shapes": "lambda a: bcast.broadcast_shapes([2, 3], [3], mode='pdpd', axis=a)",
    "legacy elementwise_plan": "lambda a: bcast.elementwise_plan([2, 3], [3], mode='legacy', axis=a)",
    "pdpd broadcast_to": "lambda a: bcast.broadcast_to(np.ones(3), [2, 3], 'pdpd', axis=a)",
    "numpy (takes none)": "lambda a: bcast.infer([3], [2, 3], 'numpy', axis=a)",
}
BAD_AXIS: list[Attack] = [
    ("100k-digit axis", "10**100_000", "refused", ("axis", "digits")),
    ("-100k-digit axis", "-10**100_000", "refused", ("axis", "digits")),
    ("2**100", "2**100", "refused", ("axis",)),
    ("bool", "True", "refused", ("axis",)),
    ("float", "1.5", "refused", ("axis",)),
    ("string", "'1'", "refused", ("axis",)),
    ("10 MB string", "'1' * 10**7", "refused", ("axis", "chars")),
    ("numpy float", "np.float64(1)", "refused", ("axis",)),
    ("__index__ raises", "BadIndex()", "refused", ("axis",)),
    ("__index__ of 100k digits", "HugeIndex()", "refused", ("axis",)),
    ("None", "None", "refused", ("axis",)),
    ("list", "[0]", "refused", ("axis",)),
    ("array", "np.array([0, 1])", "refused", ("axis",)),
]


def test_axis_attacks() -> None:
    run_child(_table_body(BAD_AXIS, AXIS_VERBS, {"numpy (takes none)": ("takes no axis",)}))


# --------------------------------------------------------------------------------------
# Class 4: Shape, Dim, intervals and symbols built from hostile values never crash.
# --------------------------------------------------------------------------------------
def test_constructors_refuse_cleanly() -> None:
    """Only BroadcastError or TypeError: no IndexError, AttributeError, RecursionError, OverflowError..."""
    calls = [
        ("Dim(None)", "Dim(None)", ("None",)),
        ("Dim(10**100_000)", "Dim(10**100_000)", ("larger",)),
        ("Dim(HugeIndex())", "Dim(HugeIndex())", ("larger",)),
        ("Dim(BadIndex())", "Dim(BadIndex())", ("__index__",)),
        ("Dim(nan)", "Dim(float('nan'))", ("integer",)),
        ("Dim(np.uint64 max)", "Dim(np.uint64(2**64 - 1))", ("larger",)),
        ("Dim(nested list)", "Dim(nested(100_000))", ("integer",)),
        ("Dim(*1000 args)", "Dim(*range(1000))", ("1000 arguments",)),
        ("Dim(5, 2)", "Dim(5, 2)", ("empty",)),
        ("Dim(10**100_000, 1)", "Dim(10**100_000, 1)", ("larger",)),
        ("Dim(0, HugeIndex())", "Dim(0, HugeIndex())", ("larger",)),
        ("Dim(BadIndex(), 3)", "Dim(BadIndex(), 3)", ("integer",)),
        ("Dim(1.5, 3)", "Dim(1.5, 3)", ("integer",)),
        ("Dim.static(True)", "Dim.static(True)", ("boolean",)),
        ("Dim.static(BadIndex())", "Dim.static(BadIndex())", ("__index__",)),
        ("Dim.interval(-(10**100_000))", "Dim.interval(-(10**100_000))", ("negative",)),
        ("Dim.symbol(10 MB bad)", "Dim.symbol('A' * 10**7 + '!')", ("not a valid symbol", "chars")),
        ("Dim.symbol(newline)", "Dim.symbol('N\\n')", ("not a valid symbol",)),
        ("Dim.symbol(int)", "Dim.symbol(123)", ("string",)),
        ("Dim.symbol(|)", "Dim.symbol('|' * 10**6)", ("not a valid symbol",)),
        ("Dim.parse(10 MB junk)", "Dim.parse('?' * 10**7)", ("cannot read",)),
        ("Dim.parse(100k digits)", "Dim.parse('7' * 100_000)", ("too large",)),
        ("Dim.parse(bytes)", "Dim.parse(b'3')", ("string",)),
        ("Shape.parse(list)", "Shape.parse([2])", ("string",)),
        ("Shape.parse(100k brackets)", "Shape.parse('(' * 100_000 + ')' * 100_000)", ("bracket",)),
        ("Shape.parse(1M dims)", "Shape.parse(','.join(['N'] * 10**6))", ("MAX_RANK",)),
        ("Shape(EvilStr)", "Shape(EvilStr('[1..0]'))", ("empty",)),
    ]
    body = "\n".join(
        f"check({label!r}, lambda: None, lambda _: {src}, 'refused', {names!r})" for label, src, names in calls
    )
    answered = [
        "Dim(EvilStr('N'))",
        "Dim.symbol(EvilStr('M'))",
        "Shape(EvilStr('[2,N]'))",
        "Shape('[' + ','.join(['N'] * bcast.MAX_RANK) + ']')",
        "Shape(range(bcast.MAX_RANK))",
        "Shape(np.arange(bcast.MAX_RANK))",
        "Dim(np.int64(2**63 - 1))",
    ]
    body += "\n" + "\n".join(f"check({src!r}, lambda: None, lambda _: {src}, 'answered')" for src in answered)
    run_child(body)


# --------------------------------------------------------------------------------------
# Class 5: more dims than a NumPy array can have, through the verbs that make arrays.
# --------------------------------------------------------------------------------------
def test_rank_over_64() -> None:
    refused = [
        "bcast.broadcast_to(X, (1,) * 65)",
        "bcast.broadcast_to(X, (1,) * 65, copy=True)",
        "bcast.broadcast_to(X, (1,) * 65, 'bidirectional')",
        "bcast.broadcast_to(X, (1,) * 65, 'explicit', axes_mapping=[64])",
        "bcast.broadcast_to(X, (1,) * 65, 'pdpd')",
        "bcast.broadcast_to(X, (1,) * 65, 'axes', broadcast_axes=range(64))",
        "bcast.broadcast_to(np.ones((1,) * 64), (1,) * 65, 'bidirectional')",
        "bcast.broadcast_to(X, [1] * bcast.MAX_RANK)",
        "bcast.expand(X, (1,) * 65)",
        "bcast.expand(np.ones((1,) * 64), (2,) * 65)",
        "bcast.broadcast_like(X, (1,) * 65)",
    ]
    body = "\n".join(f"check({src!r}, lambda: None, lambda _: {src}, 'refused', ('64',))" for src in refused)
    answered = [
        "bcast.broadcast_to(X, (1,) * 64)",
        "bcast.expand(X, (1,) * 64)",
        "bcast.broadcast_like(X, (1,) * 64)",
        "bcast.plan([1], (1,) * 65)",
        "bcast.infer([1], (1,) * 65)",
    ]
    body += "\n" + "\n".join(f"check({src!r}, lambda: None, lambda _: {src}, 'answered')" for src in answered)
    run_child(body)


# --------------------------------------------------------------------------------------
# Good input at the caps: answered, every verb and mode, within the per-call limit.
# --------------------------------------------------------------------------------------
#: good input at the caps, answered: one call each of every verb and mode (the answers' work, linear:
#: :func:`test_every_verb_is_linear`)
CAP_SETUP = """
R = bcast.MAX_RANK
INTS = [2] * R
ONES = [1] * R
SYMS_A = '[' + ','.join(f'A{i}' for i in range(R)) + ']'
SYMS_B = '[' + ','.join(f'B{i}' for i in range(R)) + ']'
NS = '[' + ','.join(['N'] * R) + ']'
"""
CAP_CALLS = [
    "bcast.infer(ONES, INTS)",
    "bcast.infer(INTS, ONES, 'bidirectional')",
    "bcast.infer(ONES, INTS, 'explicit', axes_mapping=range(R))",
    "bcast.infer(INTS, INTS, 'pdpd', axis=0)",
    "bcast.infer(INTS, INTS, 'legacy', axis=0)",
    "bcast.infer(INTS[: R // 2], INTS, 'axes', broadcast_axes=range(R // 2))",
    "bcast.infer(INTS, INTS, 'like')",
    "bcast.infer(INTS, INTS, 'none')",
    "bcast.plan(ONES, INTS).explain()",
    "bcast.broadcast_shapes(ONES, INTS, ONES)",
    "bcast.elementwise_plan(INTS, ONES, mode='pdpd').explain()",
    "bcast.broadcast_shapes(SYMS_A, SYMS_B)",
    "bcast.broadcast_shapes(SYMS_A, SYMS_B, mode='none')",
    "bcast.broadcast_shapes(NS, INTS)",
    "bcast.infer(SYMS_A, SYMS_B)",
    "bcast.plan(SYMS_A, SYMS_B, 'bidirectional').explain()",
    "bcast.infer(SYMS_A, SYMS_B, 'explicit', axes_mapping=range(R))",
    "bcast.infer(SYMS_A, SYMS_B, 'axes', broadcast_axes=[])",
    "bcast.infer(SYMS_A, SYMS_B, 'like')",
    "bcast.elementwise_plan(SYMS_A, SYMS_B).explain()",
    "bcast.broadcast_shapes(*[f'[S{i}]' for i in range(20_000)])",
    "bcast.elementwise_plan(*([[2]] * 20_000 + [ONES])).explain()",
    "__import__('bcast.svg').svg.broadcast_svg(bcast.elementwise_plan(*([[2]] * 2000 + [ONES])))",
]
#: bad input at the caps, refused, with what the message names
CAP_REFUSED = [
    ("bcast.infer(ONES, INTS, 'explicit', axes_mapping=[*range(R - 1), R - 2])", "twice"),
    ("bcast.infer(ONES, INTS, 'explicit', axes_mapping=[*range(1, R), 0])", "increasing"),
    ("bcast.infer([], INTS, 'axes', broadcast_axes=[*range(R - 1), 0])", "rank"),  # an AxisSet: 0 once
    ("bcast.broadcast_shapes(NS, [2] * (R - 1) + [3], mode='none')", "N"),
    ("bcast.infer([3] * R, INTS)", "axis 0"),
    ("bcast.broadcast_shapes(INTS, [3] * R, mode='bidirectional')", "axis 0"),
]


@pytest.mark.parametrize("part", ["sample", pytest.param("rest", marks=pytest.mark.full)])
def test_every_verb_answers_at_the_cap(part: str) -> None:
    """A third of the calls (each kind of verb and shape among them) and half the refusals by default, the
    rest with the full tests: each call at the cap takes a while, and their work is counted at small sizes."""
    calls = [c for i, c in enumerate(CAP_CALLS) if (i % 3 == 0) == (part == "sample")]
    refused = [r for i, r in enumerate(CAP_REFUSED) if (i % 2 == 0) == (part == "sample")]
    body = CAP_SETUP + "\n".join(f"check({src!r}, lambda: None, lambda _: {src}, 'answered')" for src in calls)
    body += "\n" + "\n".join(
        f"check({src!r}, lambda: None, lambda _: {src}, 'refused', ({w!r},))" for src, w in refused
    )
    run_child(body)


# --------------------------------------------------------------------------------------
# The headline attacks, one child each, through the harness's own assertions.
# --------------------------------------------------------------------------------------
HEADLINES = [
    ("nested brackets", "bcast.infer('[' * 100_000, '[2]')", ("bracket",)),
    ("10 MB mode", "bcast.infer([1], [2], 'x' * 10**7)", ("unknown mode",)),
    ("range(10**20)", "bcast.infer(range(10**20), [2])", ("MAX_RANK",)),
    ("endless generator", "bcast.broadcast_shapes((i for i in itertools.count()), [2])", ("generator",)),
    ("100k-digit dim", "bcast.Shape('[' + '1' * 100_000 + ']')", ("too large",)),
    ("100k dims", "bcast.infer([1], [1] * 100_000)", ("100,000", "MAX_RANK")),
    ("40k axes", "bcast.infer([1], [2], 'explicit', axes_mapping=list(range(40_000)))", ("MAX_RANK",)),
    ("rank 65", "bcast.broadcast_to(np.ones(1), (1,) * 65)", ("64",)),
    ("10**100000 as a dim", "bcast.Shape([10**100_000])", ("larger",)),
    ("escape codes", "bcast.infer('[2,\\x1b[2J\\x07]', '[3]')", ("cannot read",)),
]


@pytest.mark.parametrize(("code", "names"), [pytest.param(c, n, id=i) for i, c, n in HEADLINES])
def test_headline_attack(code: str, names: tuple[str, ...]) -> None:
    out = attack(f"import itertools\nimport numpy as np\nimport bcast\n{code}", timeout=60)
    assert_refused(out, contains=names)


# --------------------------------------------------------------------------------------
# In-process: linear work, bounded text. Work is counted (hostile.steps: Python lines run and
# functions called), never timed: the counts are the same on a loaded machine as on an idle one.
# --------------------------------------------------------------------------------------
def _fresh() -> None:
    """Forget the plans made so far: each count makes its plan anew."""
    bcast.rules.PLANS.clear()
    bcast.api.ELEMENTWISE_PLANS.clear()


def _ints(n: int) -> list[int]:
    return [2] * n


def _syms(prefix: str, n: int) -> str:
    return "[" + ",".join(f"{prefix}{i}" for i in range(n)) + "]"


LINEAR: dict[str, Callable[[int], Callable[[], object]]] = {
    "Shape(list)": lambda n: lambda: Shape(_ints(n)),
    "Shape(str)": lambda n: lambda: Shape("[" + ",".join(["2"] * n) + "]"),
    "infer numpy": lambda n: lambda: bcast.infer([1] * n, _ints(n)),
    "infer numpy clash": lambda n: lambda: bcast.infer([3] * n, _ints(n)),
    "infer bidirectional": lambda n: lambda: bcast.infer(_ints(n), [1] * n, "bidirectional"),
    "infer explicit": lambda n: lambda: bcast.infer([1] * n, _ints(n), "explicit", axes_mapping=range(n)),
    "infer explicit duplicate": lambda n: (
        lambda: bcast.infer([1] * n, _ints(n), "explicit", axes_mapping=[*range(n - 1), n - 2])
    ),
    "infer pdpd": lambda n: lambda: bcast.infer(_ints(n), _ints(n), "pdpd", axis=0),
    "infer legacy": lambda n: lambda: bcast.infer(_ints(n), _ints(n), "legacy", axis=0),
    "infer axes": lambda n: lambda: bcast.infer(_ints(n // 2), _ints(n), "axes", broadcast_axes=range(n // 2)),
    "infer like": lambda n: lambda: bcast.infer(_ints(n), _ints(n), "like"),
    "infer none": lambda n: lambda: bcast.infer(_ints(n), _ints(n), "none"),
    "plan + explain": lambda n: lambda: bcast.plan([1] * n, _ints(n)).explain(),
    "broadcast_shapes": lambda n: lambda: bcast.broadcast_shapes([1] * n, _ints(n), [1]),
    "elementwise_plan pdpd + explain": lambda n: (
        lambda: bcast.elementwise_plan(_ints(n), [1] * n, mode="pdpd").explain()
    ),
    "symbols meet symbols": lambda n: lambda: bcast.broadcast_shapes(_syms("A", n), _syms("B", n)),
    "symbols meet symbols, bidirectional": lambda n: lambda: bcast.infer(_syms("A", n), _syms("B", n), "bidirectional"),
    "symbols meet sizes": lambda n: lambda: bcast.infer(_syms("A", n), _ints(n)),
    "symbols equal symbols": lambda n: lambda: bcast.infer(_syms("A", n), _syms("B", n), "none"),
    "one symbol on every axis": lambda n: lambda: bcast.broadcast_shapes("[" + ",".join(["N"] * n) + "]", _ints(n)),
    "one symbol meets a clash": lambda n: (
        lambda: bcast.infer("[" + ",".join(["N"] * n) + "]", [2] * (n - 1) + [3], "none")
    ),
    "many operands": lambda n: lambda: bcast.broadcast_shapes(*[f"[S{i}]" for i in range(n)]),
    "many operands + explain": lambda n: lambda: bcast.elementwise_plan(*([[2]] * n + [[1] * n])).explain(),
}
#: the sizes counted: n, 2n and 4n dims (or operands); far under the cap, far over the few dims a
#: message lists before it elides the rest (the counts need no size to rise above noise: they have none)
LINEAR_N = 512


@pytest.mark.parametrize("name", list(LINEAR))
def test_every_verb_is_linear(name: str) -> None:
    """Twice the input, twice the work more (a quadratic path: four times as much at the second doubling)."""
    assert_linear(LINEAR[name], LINEAR_N, expected=(BroadcastError, TypeError), before=_fresh, what=name)


def test_the_work_count_sees_a_square() -> None:
    """The check above can fail: a loop over the input inside another is refused, a single one passed."""

    def square(n: int) -> Callable[[], object]:
        return lambda: [j for i in range(n) for j in range(i)]

    def line(n: int) -> Callable[[], object]:
        return lambda: [i for i in range(n) for _ in range(3)]

    assert_linear(line, 64, what="linear")
    with pytest.raises(AssertionError, match="steps at 64, 128, 256"):
        assert_linear(square, 64, what="square")
    assert steps(line(64)) == steps(line(64)) > 64 * 3  # the same count on every run, a step per element


def test_many_symbols_meeting_many_symbols_at_the_cap() -> None:
    """20,000 symbols meeting 20,000 others (42 s before their constraints were gathered per symbol):
    answered, one constraint per axis; the work of it, and of broadcast_shapes and infer on them,
    linear (:func:`test_every_verb_is_linear`)."""
    a, b = _syms("A", 20_000), _syms("B", 20_000)
    ep = bcast.elementwise_plan(a, b)
    assert len(ep.constraints) == 20_000
    assert str(ep.output_shape).startswith("[A0|B0,A1|B1,")


def test_many_symbols_on_one_axis_make_one_constraint() -> None:
    """Thousands of symbols broadcast on one axis: one derived symbol, one constraint (no chain of
    ever longer names, which was quadratic in size)."""
    shapes = [f"[S{i}]" for i in range(5000)]
    ep = bcast.elementwise_plan(*shapes)
    (c,) = ep.constraints
    assert c.kind == "broadcast" and len(c.symbols) == 5000
    assert str(c).startswith("each of S0, S1, S2")
    assert len(str(ep.output_shape)) < 50_000
    three = bcast.elementwise_plan("[A]", "[B]", "[1]", "[C]").constraints
    assert [str(x) for x in three] == ["each of A, B, C is 1 or one common size"]
    two = bcast.elementwise_plan("[A]", "[B]").constraints
    assert [str(x) for x in two] == ["A == B or A == 1 or B == 1"]
    assert_linear(
        lambda n: lambda: bcast.elementwise_plan(*[f"[S{i}]" for i in range(n)]), 256, before=_fresh, what="operands"
    )


def test_constraints_combine_in_linear_time() -> None:
    """Many `in` constraints on one symbol and on many symbols: contradiction() is linear."""
    n = bcast.MAX_RANK
    same = "[" + ",".join(["N"] * n) + "]"
    sizes = [2] * (n - 1) + [3]
    with pytest.raises(BroadcastError, match=r"no size of N") as info:
        bcast.infer(same, sizes, "none")
    assert len(str(info.value).encode()) < MESSAGE_BYTES
    assert "more" in str(info.value)  # the 32,768 constraints are elided, not listed

    def one_symbol(k: int) -> Callable[[], object]:
        text, ks = "[" + ",".join(["N"] * k) + "]", [2] * (k - 1) + [3]
        return lambda: bcast.infer(text, ks, "none")

    def many_symbols(k: int) -> Callable[[], object]:
        text, ks = _syms("A", k), [2] * (k - 1) + [3]
        return lambda: bcast.infer(text, ks)

    assert_linear(one_symbol, 512, expected=(BroadcastError,), before=_fresh, what="one symbol")
    assert_linear(many_symbols, 512, before=_fresh, what="many symbols")


#: hostile values at two sizes (a thousand and a million): refusing one costs the same work whatever
#: its size (the value is looked at once, in C, and quoted by its ends); (name, make(k), what the message names)
REFUSALS: list[tuple[str, Callable[[int], Callable[[], object]], str]] = [
    ("nested brackets", lambda k: lambda: bcast.infer("[" * k, "[2]"), "bracket"),
    ("a long mode", lambda k: lambda: bcast.infer([1], [2], "x" * k), "unknown mode"),
    ("a mode padded by spaces", lambda k: lambda: bcast.infer([1], [2], " " * k + "numpy"), "unknown mode"),
    ("range(10**k)", lambda k: lambda: bcast.infer(range(10 ** (k // 1000 + 19)), [2]), "MAX_RANK"),
    ("a dim of many digits", lambda k: lambda: bcast.Shape("[" + "1" * k + "]"), "too large"),
    ("many dims", lambda k: lambda: bcast.infer([1], [1] * (bcast.MAX_RANK + k)), "MAX_RANK"),
    ("many axes", lambda k: lambda: bcast.infer([1], [2], "explicit", axes_mapping=range(40_000 + k)), "MAX_RANK"),
    ("a long axis string", lambda k: lambda: bcast.infer([3], [2, 3], "pdpd", axis="1" * k), "axis"),
    ("escape codes", lambda k: lambda: bcast.infer("[2," + "\x1b[2J\x07" * k + "]", "[3]"), "cannot read"),
]


@pytest.mark.parametrize(("make", "names"), [pytest.param(m, w, id=i) for i, m, w in REFUSALS])
def test_a_refusal_costs_the_same_whatever_the_size_of_what_it_refuses(
    make: Callable[[int], Callable[[], object]], names: str
) -> None:
    """The headline attacks again, in process: a thousand times the garbage, (almost) no more work."""
    with pytest.raises((BroadcastError, TypeError), match=names):
        make(1000)()
    small, large = (steps(make(k), (BroadcastError, TypeError)) for k in (1000, 1_000_000))
    assert large <= small + 100, f"{small:,} steps at a thousand, {large:,} at a million"


def test_messages_quote_values_briefly() -> None:
    """A long shape is elided in a message: its first and last dims, and how many are skipped."""
    with pytest.raises(BroadcastError) as info:
        bcast.infer([1] * 29_994 + [2, 2, 2, 2, 2, 3], [4] * 30_000)
    msg = str(info.value)
    assert "more)" in msg and "[1, 1, 1," in msg and "2, 2, 3]" in msg
    assert "at output axis 29994, the data dim 2 meets the target dim 4" in msg
    assert len(msg.encode()) < MESSAGE_BYTES
    s = Shape([1] * 29_997 + [2, 2, 2])
    assert shape_text(s).startswith("[1,1,1,") and shape_text(s).endswith(",2,2,2]")
    assert "(29,9" in shape_text(s) and len(shape_text(s)) < 200
    assert given_text("x" * 10**7).count("x") < 400
    assert int_text(10**100_000).startswith("<an integer of about 100,001 digits")
    assert int_text(-(10**50)) == "-10000000000000...(51 digits)...000000"


def test_given_text_and_shape_text_cost_nothing_for_huge_values() -> None:
    """The text functions format only what they show: a million-dim list costs as little as ten thousand."""
    big, small = [7] * 10**6, [7] * 10**4
    assert steps(lambda: given_text(big)) == steps(lambda: given_text(small))
    long, short = Shape([7] * 30_000), Shape([7] * 300)
    assert steps(lambda: shape_text(long)) <= steps(lambda: shape_text(short)) + 50
    assert given_text((2, 3)) == "(2, 3)" and given_text([2]) == "[2]" and given_text((2,)) == "(2,)"


def test_max_rank_is_exported_and_documented() -> None:
    assert bcast.MAX_RANK == bcast.dims.MAX_RANK >= 4096
    assert "MAX_RANK" in (bcast.__doc__ or "") and "MAX_RANK" in (bcast.dims.__doc__ or "")
    Shape([1] * bcast.MAX_RANK)
    with pytest.raises(BroadcastError, match=r"MAX_RANK"):
        Shape([1] * (bcast.MAX_RANK + 1))
    with pytest.raises(BroadcastError, match=r"MAX_RANK"):
        Shape("[" + ",".join(["?"] * (bcast.MAX_RANK + 1)) + ",]")


def test_torch_size_shapes() -> None:
    torch = pytest.importorskip("torch")
    assert bcast.infer(torch.Size([3, 1]), torch.Size([2, 3, 4])) == (2, 3, 4)
    with pytest.raises(BroadcastError, match=r"MAX_RANK"):
        bcast.infer([1], torch.Size([1] * 100_000))


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.lists(st.one_of(st.integers(), st.booleans(), st.floats(), st.none(), st.text(max_size=5)), max_size=12),
        st.text(max_size=40),
        st.text(alphabet="[](),.?-0123456789N| \x1b\x00", max_size=60),
    )
)
def test_any_value_is_a_shape_or_a_clean_refusal(value: object) -> None:
    """Whatever the value, Shape() builds a shape or raises BroadcastError/TypeError with a clean message."""
    try:
        s = Shape(value)
    except (BroadcastError, TypeError) as e:
        msg = str(e)
        assert msg.strip()
        assert len(msg.encode("utf-8", "backslashreplace")) < MESSAGE_BYTES
        assert_clean_text(msg)
    else:
        assert s.rank is None or s.rank <= bcast.MAX_RANK


def test_dims_of_every_kind_from_hostile_numbers() -> None:
    """In-process spot checks of the int paths (the children above check them through every verb)."""
    assert Shape([np.int64(3), np.uint8(2), -1]) == Shape("[3,2,?]")
    assert Dim(np.int64(2**63 - 1)) == 2**63 - 1
    for bad in (np.uint64(2**64 - 1), 2**63, 10**30):
        with pytest.raises(BroadcastError, match=r"larger"):
            Dim(bad)
    for bad in (True, np.bool_(False), 2.0, np.float32(2), float("inf"), 1j):
        with pytest.raises(TypeError):
            Dim(bad)
