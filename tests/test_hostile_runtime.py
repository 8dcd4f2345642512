"""Hostile and careless input at run time: the ONNX backend, the operators, the engines of other
libraries (PyTorch, array-api-strict, Dask) and the PaddlePaddle profile.

The contract: bad input gets a ``BroadcastError`` (a ``ValueError``) or a ``TypeError`` whose
message names what was wrong (shapes, dims, dtype, bytes), within a second or two, with bounded
memory, in under 2 KB; never a ``MemoryError`` (least of all an empty one). Each attack runs in a
child process with a timeout and an address-space limit (``hostile.py``), chosen so that the
attack would blow it without the check that refuses it: a child limited to 2 GiB that asks for
3 GB would meet a ``MemoryError`` if the request were not refused first. That the refusal names
the process's ``RLIMIT_AS`` proves the check reads it.

The classes, one section each:

1. memory: every path that allocates checks first, against the RAM available and the
   process's ``RLIMIT_AS`` (less what it maps already): Expand, Reshape, Cast, CastLike,
   Identity, Unsqueeze, Squeeze, Gemm (its product and C's term), the normalisations (their
   intermediates in the stash type, not only the output), initializers and Constant values
   with huge dims, Paddle's elementwise ops and gradients, Dask graphs (too many blocks, blocks
   too large), PyTorch and array-api-strict copies; and the last resort, a ``MemoryError`` that
   slips past the checks, becomes a ``BroadcastError`` saying "out of memory" and naming the op;
2. the wrong kind of error: opset versions that are no version, Reshape products that wrap
   around in int64, ranks past NumPy's 64, Squeeze of a dim that is not 1, axes out of range or
   repeated, negative dims, a PyTorch tensor without array-api-compat, array-likes whose
   ``__array__`` raises or returns garbage, dtypes that are not numbers, bad Gemm and
   LayerNormalization attributes;
3. PyTorch inputs follow PyTorch's ``expand``: the view aliases the input (in process).

In-process unit tests check ``check_allocation``'s ``RLIMIT_AS`` arithmetic with the limits and
the mapped size monkeypatched.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import bcast
from bcast import BroadcastError
from bcast.engines import memory
from hostile import Outcome, assert_refused, attack

GiB = 1 << 30
#: the limit of most children: NumPy, onnx and bcast map about 160 MiB of it
LIMIT = 2 * GiB
#: PyTorch maps about 620 MiB on import
TORCH_LIMIT = 3 * GiB

HAS = {name: importlib.util.find_spec(name) is not None for name in ("onnx", "torch", "dask", "array_api_strict")}


def _need(name: str) -> None:
    if not HAS[name]:
        pytest.skip(f"{name} is not installed (an optional extra)")


def _refused_for_memory(out: Outcome, *names: str) -> None:
    """Refused as a BroadcastError naming the bytes and the process's limit (so the RLIMIT_AS check is what refused)."""
    assert_refused(out, kinds=("BroadcastError",), contains=("bytes", *names))


ONNX = "import numpy as np\nfrom onnx import TensorProto, helper\nfrom bcast.onnx import backend\n"
#: a float64 vector of 3 GB that costs nothing: a broadcast view of one element
VIEW_3GB = "big = np.broadcast_to(np.ones(1), (3 * 2**27,))\n"


# --------------------------------------------------------------------------------------
# 1. memory: checked before every allocation, against RAM and RLIMIT_AS
# --------------------------------------------------------------------------------------
#: name: (code, what the message names); each asks for about 3 GB (or more) in a child of 2 GiB
ONNX_ALLOCATIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "expand": (
        "n = helper.make_node('Expand', ['x', 's'], ['y'])\n"
        "backend.run_node(n, [np.ones(1), np.array([3 * 2**27], np.int64)])",
        ("Expand", "RLIMIT_AS", "402653184"),
    ),
    "reshape-of-a-view": (
        VIEW_3GB + "n = helper.make_node('Reshape', ['x', 's'], ['y'])\n"
        "backend.run_node(n, [big, np.array([3 * 2**26, 2], np.int64)])",
        ("Reshape", "RLIMIT_AS"),
    ),
    "cast-to-double": (
        "x = np.broadcast_to(np.ones(1, np.float32), (3 * 2**27,))\n"
        "n = helper.make_node('Cast', ['x'], ['y'], to=TensorProto.DOUBLE)\n"
        "backend.run_node(n, [x])",
        ("Cast", "float64", "RLIMIT_AS"),
    ),
    "castlike-to-complex128": (
        "x = np.broadcast_to(np.ones(1, np.float32), (3 * 2**26,))\n"
        "n = helper.make_node('CastLike', ['x', 't'], ['y'])\n"
        "backend.run_node(n, [x, np.zeros(1, np.complex128)])",
        ("CastLike", "complex128"),
    ),
    "cast-to-strings": (  # 32 M Python strings: over 2 GB of objects
        "x = np.broadcast_to(np.ones(1, np.float32), (2**25,))\n"
        "n = helper.make_node('Cast', ['x'], ['y'], to=TensorProto.STRING)\n"
        "backend.run_node(n, [x])",
        ("Cast", "object"),
    ),
    "identity-of-a-view": (
        VIEW_3GB + "backend.run_node(helper.make_node('Identity', ['x'], ['y']), [big])",
        ("Identity",),
    ),
    "unsqueeze-of-a-view": (
        VIEW_3GB + "n = helper.make_node('Unsqueeze', ['x', 'a'], ['y'])\n"
        "backend.run_node(n, [big, np.array([0], np.int64)])",
        ("Unsqueeze",),
    ),
    "squeeze-of-a-view": (
        "big = np.broadcast_to(np.ones(1), (1, 3 * 2**27))\n"
        "backend.run_node(helper.make_node('Squeeze', ['x'], ['y']), [big])",
        ("Squeeze",),
    ),
    "gemm-product": (  # A' @ B' of (65536, 16384) float32: 4 GiB
        "a = np.broadcast_to(np.ones(1, np.float32), (2**16, 1))\n"
        "b = np.broadcast_to(np.ones(1, np.float32), (1, 2**14))\n"
        "backend.run_node(helper.make_node('Gemm', ['a', 'b'], ['y']), [a, b])",
        ("gemm", "[65536,16384]"),
    ),
    "layer-normalization-intermediates": (  # Y is 512 MiB of float16; the float32 stash needs 2 GiB
        "x = np.broadcast_to(np.ones(1, np.float16), (2**28,))\n"
        "n = helper.make_node('LayerNormalization', ['x', 's'], ['y', 'm', 'i'])\n"
        "backend.run_node(n, [x, np.ones(1, np.float16)])",
        ("layer_normalization", "stash type float32", "intermediates"),
    ),
    "initializer-2**62-elements-and-no-data": (
        "t = TensorProto(name='w', data_type=TensorProto.FLOAT, dims=[2**62])\n"
        "g = helper.make_graph([helper.make_node('Identity', ['w'], ['y'])], 'g', [],\n"
        "    [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)], initializer=[t])\n"
        "backend.prepare(helper.make_model(g))",
        ("initializer 'w'", "[4611686018427387904]", "0"),
    ),
    "constant-value-2**62-elements": (
        "t = TensorProto(data_type=TensorProto.DOUBLE, dims=[2**31, 2**31], raw_data=b'12345678')\n"
        "n = helper.make_node('Constant', [], ['y'], value=t)\n"
        "backend.run_node(n, [])",
        ("Constant", "attribute value", "4611686018427387904"),
    ),
}


@pytest.mark.parametrize("name", list(ONNX_ALLOCATIONS))
def test_onnx_backend_checks_every_allocation_first(name: str) -> None:
    _need("onnx")
    code, names = ONNX_ALLOCATIONS[name]
    out = attack(ONNX + code, memory=LIMIT)
    if "initializer" in name or "constant" in name:  # refused for its dims, before any size check
        assert_refused(out, kinds=("BroadcastError",), contains=names)
    else:
        _refused_for_memory(out, *names)


#: name: (code, what the message names): the operators and verbs on NumPy arrays
NUMPY_ALLOCATIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "broadcast_to-copy": (
        "import numpy as np, bcast\nbcast.broadcast_to(np.ones(1), (3 * 2**27,), copy=True)",
        ("numpy", "RLIMIT_AS", "(402653184,)"),
    ),
    "ops.add": (
        "import numpy as np, bcast.ops as ops\nops.add(np.ones((2**14, 1)), np.ones(3 * 2**13))",
        ("add", "RLIMIT_AS"),
    ),
    "gemm-c-term": (  # the product alone (1.1 GiB) fits; with C's scaled term beside it, it does not
        "import numpy as np, bcast.ops as ops\n"
        "a = np.broadcast_to(np.ones(1, np.float32), (2**15, 1))\n"
        "b = np.broadcast_to(np.ones(1, np.float32), (1, 9000))\n"
        "ops.gemm(a, b, np.ones(9000, np.float32))",
        ("gemm", "intermediates", "2 arrays of shape (32768, 9000)"),
    ),
    "rms-normalization-intermediates": (
        "import numpy as np, bcast.ops as ops\n"
        "x = np.broadcast_to(np.ones(1, np.float16), (2**28,))\n"
        "ops.rms_normalization(x, np.ones(1, np.float16))",
        ("rms_normalization", "stash type float32"),
    ),
    "paddle-elementwise": (  # a (16384, 16384) float64 result: 2 GiB
        "import numpy as np, bcast.paddle as bp\n"
        "bp.elementwise('add', np.broadcast_to(np.ones(1), (2**14, 1)), np.broadcast_to(np.ones(1), (2**14,)))",
        ("paddle", "add", "RLIMIT_AS"),
    ),
    "paddle-elementwise_grad": (
        "import numpy as np, bcast.paddle as bp\n"
        "x, y = np.broadcast_to(np.ones(1), (2**13, 1)), np.broadcast_to(np.ones(1), (2**13,))\n"
        "bp.elementwise_grad('mul', x, y, np.broadcast_to(np.ones(1), (2**13, 2**13)))",
        ("paddle", "mul grad", "RLIMIT_AS"),
    ),
}


@pytest.mark.parametrize("name", list(NUMPY_ALLOCATIONS))
def test_ops_verbs_and_paddle_check_every_allocation_first(name: str) -> None:
    code, names = NUMPY_ALLOCATIONS[name]
    _refused_for_memory(attack(code, memory=LIMIT), *names)


DASK = "import numpy as np, dask.array as da, bcast, bcast.ops as ops\n"

DASK_GRAPHS: dict[str, tuple[str, tuple[str, ...]]] = {
    # 10**18 elements: tens of billions of blocks, built one by one before the fix
    "broadcast_to-10**18": (
        "bcast.broadcast_to(da.ones((1,), chunks=1), (10**6, 10**6, 10**6))",
        ("blocks", "bcast.max-blocks", "(1000000, 1000000, 1000000)"),
    ),
    "elementwise-of-tiny-chunks": (  # 20000 x 20000 blocks of one element each
        "ops.add(da.ones((20000, 1), chunks=1), da.ones((1, 20000), chunks=1))",
        ("blocks", "400000000"),
    ),
    "a-block-larger-than-memory": (  # one block of 8 TiB, kept by the broadcast
        "bcast.broadcast_to(da.ones((2**20, 2**20), chunks=-1), (2, 2**20, 2**20))",
        ("block", "bytes", "rechunk"),
    ),
}


@pytest.mark.parametrize("name", list(DASK_GRAPHS))
def test_dask_refuses_absurd_graphs_before_building_them(name: str) -> None:
    _need("dask")
    code, names = DASK_GRAPHS[name]
    assert_refused(attack(DASK + code, memory=3 * GiB), kinds=("BroadcastError",), contains=names)


FOREIGN_ALLOCATIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "torch-materialize": (
        "torch",
        "import torch, bcast\nbcast.broadcast_to(torch.ones(1, dtype=torch.float64), (2**29,), copy=True)",
        ("torch.float64", "RLIMIT_AS"),
    ),
    "torch-ops.add": (
        "torch",
        "import torch, bcast.ops as ops\nf64 = torch.float64\n"
        "ops.add(torch.ones(2**14, 1, dtype=f64), torch.ones(2**15, dtype=f64))",
        ("add", "RLIMIT_AS"),
    ),
    "array-api-strict-materialize": (
        "array_api_strict",
        "import array_api_strict as xp, bcast\nbcast.broadcast_to(xp.ones(1), (3 * 2**27,), copy=True)",
        ("float64", "RLIMIT_AS"),
    ),
}


@pytest.mark.parametrize("name", list(FOREIGN_ALLOCATIONS))
def test_other_libraries_copies_are_checked_first(name: str) -> None:
    lib, code, names = FOREIGN_ALLOCATIONS[name]
    _need(lib)
    torch = lib == "torch"
    out = attack(code, memory=TORCH_LIMIT if torch else LIMIT, timeout=60)
    _refused_for_memory(out, *names)


def test_a_torch_view_beyond_int64_elements_is_a_broadcast_error() -> None:
    _need("torch")
    out = attack("import torch, bcast\nbcast.broadcast_to(torch.ones(1), (2**40, 2**40))", memory=TORCH_LIMIT)
    assert_refused(out, kinds=("BroadcastError",), contains=("elements", "(1099511627776, 1099511627776)"))


#: the checks switched off in the child: what NumPy (or PyTorch) then raises must still reach the user
#: as a BroadcastError naming the op (the last resort)
NO_CHECKS = (
    "import bcast.engines.memory as m\n"
    "m.address_space_left = lambda: None\n"
    "m.available_memory = lambda: None\n"
    "m._NO_CHECK_BYTES = 2**62\n"
)

LAST_RESORT: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "ops.add": (
        "",
        "import numpy as np, bcast.ops as ops\nops.add(np.ones((2**14, 1)), np.ones(3 * 2**13))",
        ("out of memory: add", "(16384, 1) float64", "(24576,) float64"),
    ),
    "onnx-node": (
        "onnx",
        ONNX + "backend.run_node(helper.make_node('Expand', ['x', 's'], ['y'], name='e1'),"
        " [np.ones(1), np.array([3 * 2**27], np.int64)])",
        ("out of memory: Expand node 'e1'", "GiB"),
    ),
    "paddle": (
        "",
        "import numpy as np, bcast.paddle as bp\n"
        "bp.elementwise('add', np.broadcast_to(np.ones(1), (2**14, 1)), np.broadcast_to(np.ones(1), (2**14,)))",
        ("out of memory: paddle elementwise", "GiB"),
    ),
    "torch": (
        "torch",
        "import torch, bcast\nbcast.broadcast_to(torch.ones(1, dtype=torch.float64), (2**29,), copy=True)",
        ("out of memory", "4294967296 bytes"),
    ),
}


@pytest.mark.parametrize("name", list(LAST_RESORT))
def test_a_memory_error_that_slips_through_becomes_a_broadcast_error(name: str) -> None:
    lib, code, names = LAST_RESORT[name]
    if lib:
        _need(lib)
    out = attack(NO_CHECKS + code, memory=TORCH_LIMIT if lib == "torch" else LIMIT, timeout=60)
    assert_refused(out, kinds=("BroadcastError",), contains=names)


# --------------------------------------------------------------------------------------
# 2. the wrong kind of error
# --------------------------------------------------------------------------------------
ADD = "n = helper.make_node('Add', ['a', 'b'], ['y'])\n"

#: opset_version given to run_node: (value, kinds, what the message names)
OPSETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "an-array": ("np.array([13])", "TypeError", ("opset version", "integer", "array([13])")),
    "a-float": ("13.0", "TypeError", ("opset version", "integer", "13.0")),
    "a-string": ("'13'", "TypeError", ("opset version", "'13'")),
    "negative": ("-1", "BroadcastError", ("opset version -1", "1 to")),
    "zero": ("0", "BroadcastError", ("opset version 0", "1 to")),
    "999": ("999", "BroadcastError", ("opset version 999", "1 to")),
}


@pytest.mark.parametrize("name", list(OPSETS))
def test_run_node_refuses_an_opset_that_is_no_version(name: str) -> None:
    _need("onnx")
    value, kind, names = OPSETS[name]
    out = attack(ONNX + ADD + f"backend.run_node(n, [np.ones(2), np.ones(2)], opset_version={value})", memory=LIMIT)
    assert_refused(out, kinds=(kind,), contains=names)


@pytest.mark.parametrize("version", [0, 999])
def test_a_model_with_an_opset_that_is_no_version_is_refused(version: int) -> None:
    _need("onnx")
    code = (
        ONNX + ADD + "vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [2]) for k in 'aby']\n"
        "g = helper.make_graph([n], 'g', vi[:2], vi[2:])\n"
        f"backend.prepare(helper.make_model(g, opset_imports=[helper.make_opsetid('', {version})]))"
    )
    assert_refused(attack(code, memory=LIMIT), kinds=("BroadcastError",), contains=(f"opset version {version}",))


RESHAPE = "n = helper.make_node('Reshape', ['x', 's'], ['y'], allowzero={z})\nbackend.run_node(n, [{x}, np.array({s})])"

#: name: (input, shape, allowzero, what the message names): int64 products that wrap around
RESHAPES: dict[str, tuple[str, str, int, tuple[str, ...]]] = {
    # 2**62 * 4 is 0 in int64; the empty result would span 2**64 bytes
    "a-zero-size-result-spanning-2**64-bytes": ("np.zeros(0)", "[2**62, 4, 0]", 1, ("[4611686018427387904, 4, 0]",)),
    # the known dims multiply to 2**64, 0 in int64: nothing to infer the -1 from
    "known-dims-that-wrap-to-0": ("np.zeros(4)", "[2**32, 2**32, -1]", 0, ("cannot infer the -1",)),
    # the -1 is inferred as 0, next to dims whose product wraps around
    "an-inferred-0-beside-2**124": ("np.zeros((0, 3))", "[-1, 2**62, 2**62]", 0, ("spans more than",)),
}


@pytest.mark.parametrize("name", list(RESHAPES))
def test_a_reshape_whose_product_wraps_around_is_a_broadcast_error(name: str) -> None:
    _need("onnx")
    x, shape, allowzero, names = RESHAPES[name]
    out = attack(ONNX + RESHAPE.format(x=x, s=shape, z=allowzero), memory=LIMIT)
    assert_refused(out, kinds=("BroadcastError",), contains=("Reshape", *names))


#: name: (code, what the message names): plumbing nodes given impossible axes or dims
PLUMBING: dict[str, tuple[str, tuple[str, ...]]] = {
    "unsqueeze-to-rank-65": (
        "backend.run_node(helper.make_node('Unsqueeze', ['x', 'a'], ['y']), [np.ones(1), np.arange(64)])",
        ("rank 65", "64"),
    ),
    "squeeze-of-a-dim-of-3": (
        "backend.run_node(helper.make_node('Squeeze', ['x', 'a'], ['y']), [np.ones((1, 3)), np.array([1])])",
        ("axis 1 of size 3", "[1,3]"),
    ),
    "unsqueeze-axis-out-of-range": (
        "backend.run_node(helper.make_node('Unsqueeze', ['x', 'a'], ['y']), [np.ones(3), np.array([5])])",
        ("axis 5", "rank 2"),
    ),
    "squeeze-repeated-axes": (
        "backend.run_node(helper.make_node('Squeeze', ['x', 'a'], ['y']), [np.ones((1, 3)), np.array([0, -2])])",
        ("repeat an axis", "[0, -2]"),
    ),
    "initializer-with-a-negative-dim": (
        "t = TensorProto(name='w', data_type=TensorProto.FLOAT, dims=[-3, 2], float_data=[1.0])\n"
        "g = helper.make_graph([helper.make_node('Identity', ['w'], ['y'])], 'g', [],\n"
        "    [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)], initializer=[t])\n"
        "backend.prepare(helper.make_model(g))",
        ("initializer 'w'", "negative dim", "-3"),
    ),
    "expand-to-a-negative-dim": (
        "backend.run_node(helper.make_node('Expand', ['x', 's'], ['y']), [np.ones(3), np.array([-2, 3])])",
        ("-2",),
    ),
}


@pytest.mark.parametrize("name", list(PLUMBING))
def test_impossible_axes_and_dims_are_broadcast_errors(name: str) -> None:
    _need("onnx")
    code, names = PLUMBING[name]
    assert_refused(attack(ONNX + code, memory=LIMIT), kinds=("BroadcastError",), contains=names)


#: array-api-compat blocked in the child, as if it were not installed
NO_COMPAT = "import sys\nsys.modules['array_api_compat'] = None\nimport torch, bcast, bcast.ops as ops\n"


@pytest.mark.parametrize(
    "call", ["bcast.broadcast_to(torch.ones(3), (2, 3))", "ops.add(torch.ones(3), torch.ones(3))"], ids=["verb", "op"]
)
def test_a_torch_tensor_without_array_api_compat_names_the_extra(call: str) -> None:
    _need("torch")
    out = attack(NO_COMPAT + call, memory=TORCH_LIMIT, timeout=60)
    assert_refused(
        out,
        kinds=("TypeError",),
        contains=("torch.Tensor", "array-api-compat", 'pip install "bcast[array-api]"'),
    )
    assert "ModuleNotFoundError" in out.bases  # code that catches ImportError still does


#: array-likes whose __array__ raises, or returns what is not an array
HOSTILE_ARRAYS = (
    "import numpy as np\n"
    "class Raises:\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        raise RuntimeError('boom \\x1b[2J')\n"
    "class Garbage:\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        return 'not an array'\n"
)

ARRAY_LIKES: dict[str, tuple[str, tuple[str, ...]]] = {
    "run_node-raises": (
        ONNX + "backend.run_node(helper.make_node('Add', ['a', 'b'], ['y'], name='a1'), [Raises(), np.ones(2)])",
        ("Add node 'a1'", "input 0", "Raises", "RuntimeError"),
    ),
    "run_model-garbage": (
        ONNX + "vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [2]) for k in 'ay']\n"
        "g = helper.make_graph([helper.make_node('Identity', ['a'], ['y'])], 'g', vi[:1], vi[1:])\n"
        "backend.run_model(helper.make_model(g), [Garbage()])",
        ("input 'a'", "Garbage"),
    ),
    "paddle-raises": (
        "import bcast.paddle as bp\nbp.elementwise('add', Raises(), np.ones(2))",
        ("paddle: x", "RuntimeError"),
    ),
}


@pytest.mark.parametrize("name", list(ARRAY_LIKES))
def test_an_array_like_that_raises_or_returns_garbage_is_a_type_error(name: str) -> None:
    code, names = ARRAY_LIKES[name]
    if "run_" in name:
        _need("onnx")
    assert_refused(attack(HOSTILE_ARRAYS + code, memory=LIMIT), kinds=("TypeError",), contains=names)


#: arrays of dtypes that are not numbers, given to operators that need numbers
NOT_NUMBERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "add-structured": (
        "s = np.zeros(3, [('a', 'i4'), ('b', 'f8')])\nops.add(s, s)",
        ("add", "input A", "Add takes"),
    ),
    "gemm-strings": ("ops.gemm(np.array([['a']]), np.array([['b']]))", ("gemm", "input A", "<U1")),
    "layer-normalization-objects": (
        "ops.layer_normalization(np.array([[object()]]), np.ones(1))",
        ("layer_normalization", "input X", "object"),
    ),
    "cast-structured": (
        "from onnx import TensorProto, helper\nfrom bcast.onnx import backend\n"
        "n = helper.make_node('Cast', ['x'], ['y'], to=TensorProto.FLOAT)\n"
        "backend.run_node(n, [np.zeros(3, [('a', 'i4'), ('b', 'f8')])])",
        ("Cast node", "no ONNX tensor type"),
    ),
    "paddle-objects": (
        "import bcast.paddle as bp\nbp.elementwise('add', np.array([object()]), np.array([object()]))",
        ("paddle", "object"),
    ),
}


@pytest.mark.parametrize("name", list(NOT_NUMBERS))
def test_dtypes_that_are_not_numbers_are_type_errors(name: str) -> None:
    code, names = NOT_NUMBERS[name]
    if "cast" in name:
        _need("onnx")
    out = attack("import numpy as np, bcast.ops as ops\n" + code, memory=LIMIT)
    assert_refused(out, kinds=("TypeError",), contains=names)


#: name: (code, kind, what the message names)
ATTRIBUTES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gemm-transA=2": (
        ONNX + "backend.run_node(helper.make_node('Gemm', ['a', 'b'], ['y'], transA=2), [np.ones((2, 2))] * 2)",
        "BroadcastError",
        ("transA", "0 or 1", "2"),
    ),
    "gemm-transB-a-string": (
        ONNX + "backend.run_node(helper.make_node('Gemm', ['a', 'b'], ['y'], transB='1'), [np.ones((2, 2))] * 2)",
        "TypeError",
        ("transB", "integer", "b'1'"),
    ),
    "gemm-alpha-a-string": (
        ONNX + "backend.run_node(helper.make_node('Gemm', ['a', 'b'], ['y'], alpha='x'), [np.ones((2, 2))] * 2)",
        "TypeError",
        ("alpha", "number", "b'x'"),
    ),
    "gemm-alpha-beyond-float32": (
        "import numpy as np, bcast.ops as ops\nops.gemm(np.ones((2, 2)), np.ones((2, 2)), alpha=10**400)",
        "BroadcastError",
        ("alpha", "float32"),
    ),
    "layer-normalization-axis-out-of-range": (
        ONNX + "n = helper.make_node('LayerNormalization', ['x', 's'], ['y'], axis=5)\n"
        "backend.run_node(n, [np.ones((2, 3), np.float32), np.ones(3, np.float32)])",
        "BroadcastError",
        ("axis 5", "rank 2", "-2 to 1"),
    ),
    "layer-normalization-epsilon-a-string": (
        "import numpy as np, bcast.ops as ops\nops.layer_normalization(np.ones((2, 3)), np.ones(3), epsilon='1e-5')",
        "TypeError",
        ("epsilon", "number", "'1e-5'"),
    ),
    "rms-normalization-epsilon-beyond-float32": (
        "import numpy as np, bcast.ops as ops\nops.rms_normalization(np.ones((2, 3)), np.ones(3), epsilon=1e300)",
        "BroadcastError",
        ("epsilon", "float32"),
    ),
}


@pytest.mark.parametrize("name", list(ATTRIBUTES))
def test_bad_gemm_and_normalization_attributes(name: str) -> None:
    code, kind, names = ATTRIBUTES[name]
    if "backend" in code:
        _need("onnx")
    assert_refused(attack(code, memory=LIMIT), kinds=(kind,), contains=names)


# --------------------------------------------------------------------------------------
# 3. PyTorch inputs: expand's convention (in process)
# --------------------------------------------------------------------------------------
def test_torch_views_alias_their_input_as_expand_does() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    t = torch.arange(3.0)
    view: Any
    for view in (
        bcast.broadcast_to(t, (2, 3)),
        bcast.expand(t, (2, 3)),
        bcast.plan((3,), (2, 3))(t),
        t.expand(2, 3),  # the convention itself
    ):
        assert view.data_ptr() == t.data_ptr()
        assert view.stride() == (0, 1)
    v: Any = bcast.broadcast_to(t, (2, 3))
    t[0] = 10.0
    assert v[1, 0].item() == 10.0  # a write into the input shows through the view
    with pytest.raises(RuntimeError):
        v.add_(1)  # and PyTorch refuses writes into the view, whose elements overlap
    copy: Any = bcast.broadcast_to(t, (2, 3), copy=True)
    assert copy.data_ptr() != t.data_ptr() and copy.is_contiguous()


# --------------------------------------------------------------------------------------
# check_allocation's arithmetic (in process, with the limits monkeypatched)
# --------------------------------------------------------------------------------------
F64 = np.dtype(np.float64)


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int | None]]:
    """A process of 1 GiB RLIMIT_AS (100 MiB mapped) on a machine of plenty; change the values to taste."""
    state: dict[str, int | None] = {"as": GiB, "data": None, "vm": 100 << 20, "vm_data": 10 << 20}
    memory._LIMITS_SEEN.clear()
    monkeypatch.setattr(memory, "_read_rlimits", lambda: (state["as"], state["data"]))
    monkeypatch.setattr(memory, "mapped_memory", lambda: (state["vm"], state["vm_data"]))
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 40)
    yield state
    memory._LIMITS_SEEN.clear()


def test_the_limit_less_what_is_mapped_is_what_is_left(limits: dict[str, int | None]) -> None:
    left = GiB - (100 << 20)
    memory.check_allocation((left // 8,), F64)  # exactly what is left: allowed
    with pytest.raises(BroadcastError) as info:
        memory.check_allocation((left // 8 + 1,), F64, mode="numpy")
    msg = str(info.value)
    assert f"needs {left + 8} bytes" in msg and f"the {left} bytes" in msg, msg
    assert f"RLIMIT_AS, {GiB} bytes; {100 << 20} bytes mapped already" in msg, msg
    assert info.value.mode == "numpy"


def test_copies_count_towards_the_limit(limits: dict[str, int | None]) -> None:
    memory.check_allocation((2**26,), F64)  # 512 MiB: fits in the 924 MiB left
    with pytest.raises(BroadcastError, match="2 arrays of shape"):
        memory.check_allocation((2**26,), F64, copies=2)
    with pytest.raises(BroadcastError, match="result and intermediates"):
        memory.check_allocations([((2**26,), F64, 1), ((2**25,), F64, 2)], mode="gemm", what="compute")


def test_rlimit_data_counts_against_the_data_mapped(limits: dict[str, int | None]) -> None:
    limits["as"] = None
    limits["data"] = 300 << 20
    with pytest.raises(BroadcastError, match=r"RLIMIT_DATA, 314572800 bytes; 10485760 bytes mapped"):
        memory.check_allocation((300 << 17,), F64)  # 300 MiB: over the 290 MiB of data left
    memory.check_allocation((290 << 17,), F64)


def test_no_limit_or_no_statm(limits: dict[str, int | None], monkeypatch: pytest.MonkeyPatch) -> None:
    limits["as"] = None
    assert memory.address_space_left() is None
    memory.check_allocation((2**30,), F64)  # 8 GiB: only RAM (plenty, here) is checked
    limits["as"] = GiB
    memory._LIMITS_SEEN.clear()
    monkeypatch.setattr(memory, "mapped_memory", lambda: None)  # /proc unreadable: the whole limit is left
    left = memory.address_space_left()
    assert left is not None and left[0] == GiB and "0 bytes mapped already" in left[1]
    with pytest.raises(BroadcastError):
        memory.check_allocation((GiB // 8 + 1,), F64)


def test_the_rlimit_read_is_cached(limits: dict[str, int | None], monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []

    def read() -> tuple[int | None, int | None]:
        reads.append(1)
        return GiB, None

    monkeypatch.setattr(memory, "_read_rlimits", read)
    for _ in range(50):
        memory.check_allocation((2**20,), F64)  # 8 MiB: checked
    assert len(reads) == 1


def test_small_arrays_read_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> None:
        raise AssertionError("read for a small array")

    monkeypatch.setattr(memory, "address_space_left", boom)
    monkeypatch.setattr(memory, "available_memory", boom)
    memory.check_allocation((1000, 100), F64)  # 800 KB: under the 1 MiB fast path
    memory.check_allocations([((1000,), F64, 3)])


def test_the_real_limits_are_read() -> None:
    import resource

    memory._LIMITS_SEEN.clear()
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    assert memory.process_limits()[0] == (None if soft == resource.RLIM_INFINITY else soft)
    mapped = memory.mapped_memory()
    if mapped is not None:  # Linux: this process maps at least NumPy
        assert mapped[0] > 10 << 20 and 0 < mapped[1] <= mapped[0]


def test_the_guard_turns_a_memory_error_into_a_broadcast_error() -> None:
    @memory.out_of_memory_guard("frob")
    def frob(x: object, y: object) -> None:
        raise MemoryError()  # empty, as Python's own are

    with pytest.raises(BroadcastError) as info:
        frob(np.ones((2, 3)), 4)
    msg = str(info.value)
    assert msg.startswith("out of memory: frob on inputs (2, 3) float64, 4: an allocation of an intermediate failed")
    assert info.value.__context__ is None and info.value.__cause__ is None  # no empty MemoryError shown under it
    assert frob.__name__ == "frob"


def test_guarded_operators_read_and_pickle_as_the_functions_they_wrap() -> None:
    import inspect
    import pickle

    import bcast.ops as ops
    from bcast.ops import arithmetic

    assert pickle.loads(pickle.dumps(ops.add)) is ops.add
    assert ops.add.__name__ == "add" and ops.add.__doc__ == arithmetic.add.__doc__
    assert inspect.signature(ops.gemm).parameters["trans_a"].default == 0
    assert ops.add(np.ones(2), np.ones(2)).tolist() == [2.0, 2.0]


# ------------------------------------------------------------------------------------------------
# the backend refuses a graph that is no graph, and inputs that contradict the model, at once


def _graph_model(nodes: list[Any], outputs: tuple[str, ...] = ("y",)) -> Any:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in outputs]
    graph = helper.make_graph(nodes, "g", [x], outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


_NO_GRAPH = {
    "cycle": ([("Add", ["x", "z"], ["y"]), ("Add", ["y", "x"], ["z"])], ("y",), "a cycle: #0 Add -> #1 Add -> #0"),
    "own-output": ([("Add", ["x", "y"], ["y"])], ("y",), "a cycle: #0 Add -> #0"),
    "two-producers": ([("Add", ["x", "x"], ["y"]), ("Mul", ["x", "x"], ["y"])], ("y",), "one producer"),
    "missing-input": ([("Add", ["x", "w"], ["y"])], ("y",), "'w', which no graph input"),
    "no-outputs": ([("Add", ["x", "x"], ["y"])], (), "declares no outputs"),
    "unproduced-output": ([("Add", ["x", "x"], ["y"])], ("y", "q"), "graph output 'q' is produced by no"),
    "out-of-order": (
        [("Neg", ["t"], ["y"]), ("Abs", ["x"], ["t"])],
        ("y",),
        "produced only later by node #1",
    ),
}


@pytest.mark.parametrize("case", list(_NO_GRAPH))
def test_the_backend_refuses_a_graph_that_is_no_graph_at_prepare(case: str) -> None:
    pytest.importorskip("onnx")
    from onnx import helper

    from bcast.onnx.backend import prepare

    specs, outputs, words = _NO_GRAPH[case]
    nodes = [helper.make_node(op, ins, outs) for op, ins, outs in specs]
    with pytest.raises(BroadcastError) as info:
        prepare(_graph_model(nodes, outputs))
    assert words in str(info.value), str(info.value)


def test_the_backend_refuses_inputs_that_contradict_the_declared_type_or_shape() -> None:
    pytest.importorskip("onnx")
    from onnx import helper

    from bcast.onnx.backend import run_model

    model = _graph_model([helper.make_node("Add", ["x", "x"], ["y"])])
    with pytest.raises(BroadcastError, match=r"input 'x' has shape \[2, 2\], but the model declares \[3\]"):
        run_model(model, [np.ones((2, 2), np.float32)])
    with pytest.raises(TypeError, match="input 'x' has dtype float64, but the model declares float32"):
        run_model(model, [np.ones(3)])
    (y,) = run_model(model, [np.ones(3, np.float32)])
    np.testing.assert_array_equal(y, np.full(3, 2, np.float32))
