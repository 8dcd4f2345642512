"""Hostile and careless input to ``bcast check`` (and the rest of the command line).

The contract: bad input exits 2 with one short, clean line on stderr and no traceback, within a
second or two and with bounded memory; a model with problems exits 1, a clean one 0; a bug of
bcast exits 3 and says so. Each attack runs in a child process with a timeout and an
address-space limit (``hostile.py``), so that a hang or a memory bomb fails one test, not the run.

The classes, one section each:

1. reading without bound: external data, the IR ``.bin``, FIFOs, devices, sparse giants, and the
   careless files (truncated, empty, not a model, a symlink loop, missing, a directory);
2. time that explodes: value propagation through reused Concats, a shape constant of a million
   values, deeply nested bodies, huge graphs;
3. graphs that are not graphs: cycles, tensors produced twice or never, empty graphs, odd opsets,
   absurd dims; the same for IR;
4. output a name can forge: control characters in names, types and paths are escaped everywhere;
5. the exit status survives a closed stdout (``bcast check m.onnx | head -1``);
6. a crash inside bcast is an internal error (exit 3), never "cannot read the model";
7. argument abuse: huge, invalid UTF-8, unknown.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.cli import main
from bcast.files import MAX_ONNX_BYTES
from bcast.openvino.ir_read import MAX_NESTING, MAX_XML_BYTES
from hostile import (
    MESSAGE_BYTES,
    STEPS_SOURCE,
    Run,
    assert_clean_text,
    assert_cli_refused,
    assert_grows_linearly,
    assert_refused,
    assert_returned,
    attack,
    command,
    counted,
)

GiB = 1 << 30
#: address space for a child that must not load what it is given: onnx and NumPy fit in far less
SMALL = 1 * GiB
ESC = "\x1b[2J\x1b[1;1H"  # clear the screen, cursor home
FORGED = f"{ESC}\rok\n0 problems found\x07\x00"


# ------------------------------------------------------------------------------------------------
# building hostile models


def _onnx() -> Any:
    return pytest.importorskip("onnx", reason="building ONNX models needs onnx")


def _vi(name: str, dims: Sequence[int | str], elem: int = 1) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, list(dims))


def _model(
    nodes: Sequence[Any],
    inputs: Sequence[Any] = (),
    outputs: Sequence[Any] = (),
    initializers: Sequence[Any] = (),
    *,
    opset: int | None = 17,
    value_info: Sequence[Any] = (),
) -> Any:
    from onnx import helper

    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(initializers))
    graph.value_info.extend(value_info)
    model = helper.make_model(graph, opset_imports=[] if opset is None else [helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _add(a: str, b: str, out: str, name: str = "") -> Any:
    from onnx import helper

    return helper.make_node("Add", [a, b], [out], name=name or f"add_{out}")


def _save(model: Any, path: Path) -> str:
    path.write_bytes(model.SerializeToString())  # onnx.save might check the model; these are meant to be bad
    return str(path)


def _clean_model() -> Any:
    """x [2,3] + b [3] -> y: no problem."""
    from onnx import numpy_helper

    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    return _model([_add("x", "b", "y")], [_vi("x", [2, 3])], [_vi("y", [2, 3])], [b])


def _clash_model(name: str = "add_mask", tensor: str = "mask") -> Any:
    """x [4,16] + mask [8]: a clash (exit 1)."""
    from onnx import numpy_helper

    m = numpy_helper.from_array(np.ones(8, np.float32), tensor)
    return _model([_add("x", tensor, "y", name)], [_vi("x", [4, 16])], [_vi("y", [4, 16])], [m])


def _port(dims: Sequence[int | str], pid: int, precision: str = "FP32") -> str:
    return f'<port id="{pid}" precision="{precision}">' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def _layer(
    lid: int,
    name: str,
    kind: str,
    data: str = "",
    ins: Sequence[Sequence[int | str]] = (),
    outs: Sequence[Sequence[int | str]] = (),
    *,
    version: str = "opset1",
    body: str = "",
    out_precision: str = "FP32",
) -> str:
    inp = "<input>" + "".join(_port(d, k) for k, d in enumerate(ins)) + "</input>" if ins else ""
    out = (
        "<output>" + "".join(_port(d, len(ins) + k, out_precision) for k, d in enumerate(outs)) + "</output>"
        if outs
        else ""
    )
    return (
        f'<layer id="{lid}" name="{name}" type="{kind}" version="{version}">'
        f"{f'<data {data}/>' if data else ''}{inp}{out}{body}</layer>"
    )


def _edge(a: int, ap: int, b: int, bp: int) -> str:
    return f'<edge from-layer="{a}" from-port="{ap}" to-layer="{b}" to-port="{bp}"/>'


def _net(layers: Sequence[str], edges: Sequence[str], tag: str = "net") -> str:
    head = '<?xml version="1.0"?>\n<net name="n" version="11">' if tag == "net" else f"<{tag}>"
    return head + "<layers>" + "\n".join(layers) + "</layers><edges>" + "\n".join(edges) + f"</edges></{tag}>"


def _param(lid: int, name: str, dims: Sequence[int]) -> str:
    return _layer(lid, name, "Parameter", f'shape="{",".join(map(str, dims))}" element_type="f32"', outs=[dims])


def _ir_add(a: Sequence[int], b: Sequence[int], out: Sequence[int], name: str = "add", kind: str = "Add") -> str:
    """Parameters a, b and an Add of them (ids 0, 1, 2)."""
    return _net(
        [
            _param(0, "a", a),
            _param(1, "b", b),
            _layer(2, name, kind, 'auto_broadcast="numpy"', ins=[a, b], outs=[out]),
        ],
        [_edge(0, 0, 2, 0), _edge(1, 0, 2, 1)],
    )


def _write_ir(tmp_path: Path, xml: str, weights: bytes | None = None, name: str = "m") -> str:
    (tmp_path / f"{name}.xml").write_text(xml, encoding="utf-8")
    if weights is not None:
        (tmp_path / f"{name}.bin").write_bytes(weights)
    return str(tmp_path / f"{name}.xml")


def _check(path: str, *extra: str, timeout: float = 30, memory: int | None = SMALL) -> Run:
    return command(["check", path, *extra], timeout=timeout, memory=memory)


def _assert_status(run: Run, status: int) -> None:
    """A model read and checked: the given exit status, clean output, no traceback."""
    assert run.returncode == status, f"exit {run.returncode}; stdout {run.stdout[-800:]!r} stderr {run.stderr[-800:]!r}"
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert_clean_text(run.stdout, "stdout")
    assert_clean_text(run.stderr, "stderr")


# ================================================================================================
# 1. reading without bound


def test_external_data_is_never_read(tmp_path: Path) -> None:
    """A 1 GiB external weights file (sparse): the check reads shapes only, in far less memory than it."""
    _onnx()
    from onnx import TensorProto

    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 14, 1 << 14], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(GiB))):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    with open(tmp_path / "w.bin", "wb") as f:
        os.truncate(f.fileno(), GiB)
    model = _model([_add("x", "w", "y")], [_vi("x", ["N", 1 << 14])], [_vi("y", [1 << 14, 1 << 14])], [w])
    run = _check(_save(model, tmp_path / "m.onnx"), "--quiet", memory=SMALL)
    _assert_status(run, 1)  # N in {1, 16384}: a constraint, so exit 1
    assert "N in {1, 16384}" in run.stdout


def test_ir_bin_is_read_only_for_small_shape_constants(tmp_path: Path) -> None:
    """A 1 GiB f32 Const (in a sparse .bin) feeding an Add, and a 100M-value i64 Const used as a target:
    neither is read; the target is reported as no shape at all."""
    big, huge = 1 << 28, 100_000_000
    layers = [
        _param(0, "x", [4, 1]),
        _layer(
            1,
            "w",
            "Const",
            f'element_type="f32" shape="{1 << 14},{1 << 14}" offset="0" size="{big * 4}"',
            outs=[[1 << 14, 1 << 14]],
        ),
        _layer(2, "add", "Add", 'auto_broadcast="numpy"', ins=[[4, 1], [1 << 14, 1 << 14]], outs=[[-1, -1]]),
        _layer(
            3,
            "t",
            "Const",
            f'element_type="i64" shape="{huge}" offset="{big * 4}" size="{huge * 8}"',
            outs=[[huge]],
            out_precision="I64",
        ),
        _layer(4, "b", "Broadcast", 'mode="numpy"', ins=[[4, 1], [huge]], outs=[[4, 1]], version="opset3"),
    ]
    edges = [_edge(0, 0, 2, 0), _edge(1, 0, 2, 1), _edge(0, 0, 4, 0), _edge(3, 0, 4, 1)]
    path = _write_ir(tmp_path, _net(layers, edges))
    with open(tmp_path / "m.bin", "wb") as f:
        os.truncate(f.fileno(), big * 4 + huge * 8)
    run = _check(path, "--quiet", memory=SMALL)
    _assert_status(run, 1)
    assert "target_shape holds 100,000,000 values" in run.stdout
    assert "add (Add)" in run.stdout  # [4,1] against [16384,16384]: a clash, found without the weights


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo.onnx":
        os.mkfifo(tmp_path / "m.onnx")
        return str(tmp_path / "m.onnx")
    if kind == "fifo.xml":
        os.mkfifo(tmp_path / "m.xml")
        return str(tmp_path / "m.xml")
    if kind == "fifo.bin":  # the .xml is fine, its .bin a FIFO
        path = _write_ir(tmp_path, _ir_add([2], [2], [2]))
        os.mkfifo(tmp_path / "m.bin")
        return path
    if kind == "zero.onnx":
        os.symlink("/dev/zero", tmp_path / "m.onnx")
        return str(tmp_path / "m.onnx")
    if kind == "zero.xml":
        os.symlink("/dev/zero", tmp_path / "m.xml")
        return str(tmp_path / "m.xml")
    if kind == "zero.bin":
        path = _write_ir(tmp_path, _ir_add([2], [2], [2]))
        os.symlink("/dev/zero", tmp_path / "m.bin")
        return path
    if kind == "dev-zero":
        return "/dev/zero"
    if kind == "directory.xml":
        (tmp_path / "m.xml").mkdir()
        return str(tmp_path / "m.xml")
    if kind == "socket.onnx":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(tmp_path / "m.onnx"))
        s.close()
        return str(tmp_path / "m.onnx")
    raise AssertionError(kind)


SPECIAL = [
    ("fifo.onnx", "FIFO"),
    ("fifo.xml", "FIFO"),
    ("fifo.bin", "FIFO"),
    ("zero.onnx", "character device"),
    ("zero.xml", "character device"),
    ("zero.bin", "character device"),
    ("directory.xml", "directory"),
    ("socket.onnx", "socket"),
]


@pytest.mark.parametrize(("kind", "words"), SPECIAL, ids=[k for k, _ in SPECIAL])
def test_only_regular_files_are_read(tmp_path: Path, kind: str, words: str) -> None:
    """A FIFO never blocks, a device is never read: each is refused at once, by what it is."""
    run = _check(_special(tmp_path, kind), timeout=20)
    assert_cli_refused(run, contains=[words, "regular file"])


def _sparse(path: Path, size: int, head: bytes = b"") -> str:
    with open(path, "wb") as f:
        f.write(head)
        os.truncate(f.fileno(), size)
    return str(path)


def test_sparse_giants_are_refused_without_being_read(tmp_path: Path) -> None:
    """2 GB of zeros named .onnx (under the cap: the protobuf scan stops at byte 0), 3 GB (over the cap),
    2 GB named .xml (over its cap), 100 MB .xml (under it: the parser stops at the first chunk)."""
    cases = [
        (_sparse(tmp_path / "a.onnx", 2 * 10**9), "not a readable ONNX model"),
        (_sparse(tmp_path / "b.onnx", 3 * GiB), f"{MAX_ONNX_BYTES:,}"),
        (_sparse(tmp_path / "c.xml", 2 * 10**9), f"{MAX_XML_BYTES:,}"),
        (_sparse(tmp_path / "d.xml", 100 * 10**6, b"<?xml version='1.0'?>\n<net>"), "not well-formed"),
    ]
    for path, words in cases:
        run = _check(path, timeout=20, memory=SMALL)
        assert_cli_refused(run, contains=[words])


def test_a_valid_model_followed_by_gigabytes_of_zeros(tmp_path: Path) -> None:
    _onnx()
    head = _clean_model().SerializeToString()
    run = _check(_sparse(tmp_path / "m.onnx", 2 * 10**9, head), memory=SMALL)
    assert_cli_refused(run, contains=["not a readable ONNX model", f"byte {len(head):,}"])


def _careless(tmp_path: Path, kind: str) -> str:
    p = tmp_path / "m.onnx"
    if kind == "truncated":
        data = _clean_model().SerializeToString()
        p.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "empty.xml":
        p = tmp_path / "m.xml"
        p.write_bytes(b"")
    elif kind == "text":
        p.write_text("this is a README, not a model\n" * 100)
    elif kind == "random":
        p.write_bytes(np.random.default_rng(0).integers(0, 256, 100_000, dtype=np.uint8).tobytes())
    elif kind == "symlink-loop":
        os.symlink(tmp_path / "m2.onnx", p)
        os.symlink(p, tmp_path / "m2.onnx")
    elif kind == "missing":
        pass
    elif kind == "missing-parent":
        p = tmp_path / "no" / "such" / "dir" / "m.onnx"
    elif kind == "not-a-dir":
        (tmp_path / "f").write_text("x")
        p = tmp_path / "f" / "m.onnx"
    elif kind == "truncated.xml":
        p = Path(_write_ir(tmp_path, _ir_add([2], [2], [2])[:300]))
    elif kind == "permission":
        p.write_bytes(_clean_model().SerializeToString())
        p.chmod(0)
    else:
        raise AssertionError(kind)
    return str(p)


CARELESS = [
    ("truncated", "not a readable ONNX model"),
    ("empty", "empty"),
    ("empty.xml", "empty"),
    ("text", "not"),
    ("random", "not"),
    ("symlink-loop", "symbolic links"),
    ("missing", "no such file"),
    ("not-a-dir", "not a directory"),
    ("truncated.xml", "not well-formed"),
    ("permission", "permission denied"),
]


@pytest.mark.parametrize(("kind", "words"), CARELESS, ids=[k for k, _ in CARELESS])
def test_careless_files_exit_2_with_one_line(tmp_path: Path, kind: str, words: str) -> None:
    if kind in ("truncated", "permission"):
        _onnx()
    if kind == "permission" and os.geteuid() == 0:
        pytest.skip("root reads any file: no permission to deny")
    run = _check(_careless(tmp_path, kind))
    assert_cli_refused(run, contains=[words])
    assert run.stderr.startswith("bcast check: ") and run.stderr.count("\n") == 1


# ================================================================================================
# 2. time that explodes


def _concat_chain(n: int) -> str:
    """ShapeOf, then n Concats, each of the previous output twice (the value doubles in length), into a
    Broadcast's target: without a memo, 2**n visits."""
    layers = [
        _param(0, "x", [2, 3]),
        _layer(1, "s", "ShapeOf", 'output_type="i64"', ins=[[2, 3]], outs=[[2]], version="opset3"),
    ]
    edges = [_edge(0, 0, 1, 0)]
    prev, port, length = 1, 1, 2
    for k in range(n):
        lid = 2 + k
        layers.append(_layer(lid, f"c{k}", "Concat", 'axis="0"', ins=[[length], [length]], outs=[[2 * length]]))
        edges += [_edge(prev, port, lid, 0), _edge(prev, port, lid, 1)]
        prev, port, length = lid, 2, 2 * length
    b = 2 + n
    layers.append(_layer(b, "b", "Broadcast", 'mode="numpy"', ins=[[2, 3], [length]], outs=[[2, 3]], version="opset3"))
    edges += [_edge(0, 0, b, 0), _edge(prev, port, b, 1)]
    return _net(layers, edges)


def _shape_chain(n: int) -> str:
    """ShapeOf -> n Convert -> Broadcast's target: a long chain, each value worked out once, no recursion."""
    layers = [
        _param(0, "x", [2, 3]),
        _layer(1, "s", "ShapeOf", 'output_type="i64"', ins=[[2, 3]], outs=[[2]], version="opset3"),
    ]
    edges = [_edge(0, 0, 1, 0)]
    prev, port = 1, 1
    for k in range(n):
        lid = 2 + k
        layers.append(_layer(lid, f"v{k}", "Convert", 'destination_type="i64"', ins=[[2]], outs=[[2]]))
        edges.append(_edge(prev, port, lid, 0))
        prev, port = lid, 1
    b = 2 + n
    layers.append(_layer(b, "b", "Broadcast", 'mode="numpy"', ins=[[2, 3], [2]], outs=[[2, 4]], version="opset3"))
    edges += [_edge(0, 0, b, 0), _edge(prev, port, b, 1)]
    return _net(layers, edges)


def test_value_propagation_is_memoised_and_linear(tmp_path: Path) -> None:
    """Reused Concats: the work grows linearly with their number (20 of them took 250 s before the values
    were memoised: 2**20 visits); 5,000 Converts in a row do not recurse (five times the interpreter's
    recursion limit; and the value arrives: the target [2,3] contradicts the declared [2,4])."""
    n = 8
    paths = [_write_ir(tmp_path, _concat_chain(k), name=f"c{k}") for k in (n // 2, n, 2 * n, 4 * n)]
    counts = counted("from bcast.check import check", [f"check({p!r})" for p in paths], timeout=60)
    assert_grows_linearly(counts[1:], n, "reused Concats")
    out = attack(
        f"from bcast.check import check\n[[p.kind for p in check(p).problems] for p in {paths[1:]!r}]", timeout=60
    )
    assert out.value == "[['invalid'], ['invalid'], ['invalid']]", str(out)  # targets of 2**11 values or more
    path = _write_ir(tmp_path, _shape_chain(5_000), name="chain")
    out = attack(f"from bcast.check import check\n[(p.kind, p.message) for p in check({path!r}).problems]", timeout=60)
    assert out.outcome == "returned", str(out)
    assert "'declared-shape'" in out.value and "propagation gives [2,3]" in out.value, out.value


def _expand_model(n: int, *, as_input: bool = False) -> Any:
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Expand", ["x", "s"], ["y"], name="expand")
    if as_input:  # the values unknown, the length declared
        return _model([node], [_vi("x", [2, 3]), _vi("s", [n], TensorProto.INT64)], [_vi("y", [])])
    s = numpy_helper.from_array(np.ones(n, np.int64), "s")
    return _model([node], [_vi("x", [2, 3])], [_vi("y", [])], [s])


def test_expand_with_a_million_value_shape_constant(tmp_path: Path) -> None:
    """A shape constant of 1,000,000 values is no shape: refused (it never finished), with no more work
    than one of 10,000 values (the values are never looked at one by one)."""
    _onnx()
    path = _save(_expand_model(1_000_000), tmp_path / "m.onnx")
    out = attack(f"from bcast.check import check\ncheck({path!r})", timeout=30, memory=SMALL)
    assert_refused(out, kinds=("CheckInputError",), contains=["invalid model", "1,000,000 values"])
    run = _check(path)
    assert_cli_refused(run, contains=["rank above 64"])
    paths = [_save(_expand_model(k), tmp_path / f"e{k}.onnx") for k in (1000, 10_000)] + [path]
    _, small, large = counted("from bcast.check import check", [f"check({p!r})" for p in paths], memory=SMALL)
    assert large <= small + 200, f"{small:,} steps for 10,000 values, {large:,} for 1,000,000"


def test_expand_with_a_million_value_shape_input(tmp_path: Path) -> None:
    """Its values unknown, its length 1,000,000: the node is invalid (a finding), found at once."""
    _onnx()
    run = _check(_save(_expand_model(1_000_000, as_input=True), tmp_path / "m.onnx"), "--quiet")
    _assert_status(run, 1)
    assert "expand (Expand): BC301 invalid:" in run.stdout and "1,000,000 values" in run.stdout


def _nested(depth: int) -> str:
    inner = _net([_param(0, "x", [2])], [], tag="body")
    for k in range(depth):
        inner = _net([_layer(0, f"ti{k}", "TensorIterator", body=inner)], [], tag="body")
    return (
        '<?xml version="1.0"?>\n'
        + inner.replace("<body>", '<net name="n" version="11">', 1)[: -len("</body>")]
        + ("</net>")
    )


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 5000])
def test_deeply_nested_bodies_are_refused_not_a_recursion_error(tmp_path: Path, depth: int) -> None:
    run = _check(_write_ir(tmp_path, _nested(depth)))
    assert_cli_refused(run, contains=[f"nest more than {MAX_NESTING} deep"])


def test_nesting_up_to_the_cap_is_checked(tmp_path: Path) -> None:
    run = _check(_write_ir(tmp_path, _nested(MAX_NESTING)))
    _assert_status(run, 0)


def test_deep_xml_elements_anywhere_are_harmless(tmp_path: Path) -> None:
    """200,000 nested elements inside a layer (not a body): parsed by expat, ignored, no recursion."""
    deep = "<x>" * 200_000 + "</x>" * 200_000
    xml = _ir_add([2], [2], [2]).replace('<data auto_broadcast="numpy"/>', f'<data auto_broadcast="numpy"/>{deep}')
    run = _check(_write_ir(tmp_path, xml))
    _assert_status(run, 0)


def _onnx_chain(tmp_path: Path, n: int) -> str:
    """``n`` Adds in a chain, each of the one before and x."""
    from onnx import helper

    nodes = [helper.make_node("Add", ["x" if i == 0 else f"t{i - 1}", "x"], [f"t{i}"]) for i in range(n)]
    return _save(_model(nodes, [_vi("x", ["N", 3])], [_vi(f"t{n - 1}", ["N", 3])]), tmp_path / f"chain{n}.onnx")


def _ir_chain_backwards(tmp_path: Path, n: int) -> str:
    """``n`` Adds in a chain, listed in the file in the reverse of the data flow."""
    layers = [_param(0, "x", [2, 3])]
    edges = []
    for i in range(1, n + 1):
        layers.append(_layer(i, f"add{i}", "Add", 'auto_broadcast="numpy"', ins=[[2, 3], [2, 3]], outs=[[2, 3]]))
        edges += [_edge(i - 1, 0 if i == 1 else 2, i, 0), _edge(0, 0, i, 1)]
    return _write_ir(tmp_path, _net(layers[:1] + layers[:0:-1], edges), name=f"back{n}")


def test_a_chain_of_nodes_is_checked_in_linear_work(tmp_path: Path) -> None:
    """Adds in a chain, ONNX, and IR listed backwards (the topological sort was quadratic, one layer per
    pass over all the rest: over a minute for 30,000): twice the nodes, twice the work."""
    _onnx()
    n = 100
    paths = [_onnx_chain(tmp_path, k) for k in (n // 2, n, 2 * n, 4 * n)]
    paths += [_ir_chain_backwards(tmp_path, k) for k in (n // 2, n, 2 * n, 4 * n)]
    counts = counted("from bcast.check import check", [f"check({p!r})" for p in paths], timeout=120)
    assert_grows_linearly(counts[1:4], n, "ONNX chain")
    assert_grows_linearly(counts[5:8], n, "IR chain listed backwards")


@pytest.mark.full
def test_a_hundred_thousand_onnx_nodes(tmp_path: Path) -> None:
    """100,000 Adds in a chain: checked (no recursion, memory bounded); the work of it linear
    (:func:`test_a_chain_of_nodes_is_checked_in_linear_work`)."""
    _onnx()
    run = _check(_onnx_chain(tmp_path, 100_000), "--quiet", timeout=300, memory=3 * GiB)
    _assert_status(run, 0)


@pytest.mark.full
def test_a_long_ir_chain_listed_backwards(tmp_path: Path) -> None:
    """30,000 Adds whose file order is the reverse of the data flow: checked; the work of it linear
    (:func:`test_a_chain_of_nodes_is_checked_in_linear_work`)."""
    run = _check(_ir_chain_backwards(tmp_path, 30_000), "--quiet", timeout=300)
    _assert_status(run, 0)


# ================================================================================================
# 3. graphs that are not graphs


def _bad_onnx(kind: str) -> Any:
    """A model that is no valid graph, of the given kind."""
    from onnx import TensorProto, helper, numpy_helper

    x, y = _vi("x", [2, 3]), _vi("y", [2, 3])
    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    if kind == "cycle":
        return _model([_add("x", "z", "w"), _add("w", "x", "z")], [x], [_vi("z", [2, 3])])
    if kind == "own-output":
        return _model([_add("x", "w", "w")], [x], [_vi("w", [2, 3])])
    if kind == "produced-twice":
        return _model([_add("x", "x", "y", "a"), _add("x", "x", "y", "b")], [x], [y])
    if kind == "overwrites-an-input":
        return _model([_add("x", "x", "x")], [x], [x])
    if kind == "missing-input":
        return _model([_add("x", "ghost", "y")], [x], [y])
    if kind == "output-of-nothing":
        return _model([_add("x", "x", "y")], [x], [_vi("ghost", [2, 3])])
    if kind == "no-nodes":
        return _model([], [x], [x])
    if kind == "no-outputs":
        return _model([_add("x", "x", "y")], [x], [])
    if kind == "unsorted":
        return _model([_add("w", "x", "y"), _add("x", "x", "w")], [x], [y])
    if kind in ("opset-0", "opset-999", "opset-negative"):
        return _model([_add("x", "b", "y")], [x], [y], [b], opset={"opset-0": 0, "opset-999": 999}.get(kind, -3))
    if kind == "opset-twice":
        m = _model([_add("x", "b", "y")], [x], [y], [b], opset=13)
        m.opset_import.append(helper.make_opsetid("ai.onnx", 17))
        return m
    if kind == "no-opset":
        return _model([_add("x", "b", "y")], [x], [y], [b], opset=None)
    if kind in ("dims-2**62-no-data", "dims-overflow", "negative-dims", "data-too-short", "rank-100-initializer"):
        dims = {
            "dims-2**62-no-data": [2**62],
            "dims-overflow": [2**62, 2**62],
            "negative-dims": [-3],
            "data-too-short": [1000],
            "rank-100-initializer": [1] * 100,
        }[kind]
        t = TensorProto(name="b", data_type=TensorProto.FLOAT, dims=dims)
        if kind in ("data-too-short", "negative-dims", "rank-100-initializer"):
            t.raw_data = b"\0" * 4
        return _model([_add("x", "b", "y")], [x], [y], [t])
    if kind == "rank-100-input":
        return _model([_add("x", "x", "y")], [_vi("x", [1] * 100)], [y])
    if kind == "not-utf8-name":
        data = _model([_add("x", "b", "y", "NAME")], [x], [y], [b]).SerializeToString()
        m = type(x).__module__ and helper.make_model(helper.make_graph([], "g", [], []))
        m.ParseFromString(data.replace(b"NAME", b"\xff\xfe\x1b\x07"))
        return m
    raise AssertionError(kind)


BAD_ONNX = [
    ("cycle", ["invalid model", "cycle"]),
    ("own-output", ["invalid model", "its own output"]),
    ("produced-twice", ["invalid model", "'y' is produced twice"]),
    ("overwrites-an-input", ["invalid model", "produced twice", "graph input"]),
    ("missing-input", ["invalid model", "'ghost'", "no node, graph input or initializer"]),
    ("output-of-nothing", ["invalid model", "graph output 'ghost'"]),
    ("no-nodes", ["invalid model", "no nodes"]),
    ("no-outputs", ["invalid model", "no outputs"]),
    ("unsorted", ["invalid model", "topological order"]),
    ("opset-0", ["invalid model", "opset 0", "start at 1"]),
    ("opset-999", ["invalid model", "opset 999", "upgrade onnx"]),
    ("opset-twice", ["invalid model", "imported twice"]),
    ("no-opset", ["invalid model", "imports no opset"]),
    ("dims-2**62-no-data", ["invalid model", "no data", "4,611,686,018,427,387,904"]),
    ("dims-overflow", ["invalid model", "overflows int64"]),
    ("negative-dims", ["invalid model", "negative dim -3"]),
    ("data-too-short", ["invalid model", "4 bytes of data", "4,000"]),
    ("rank-100-initializer", ["invalid model", "more than 64 dims"]),
    ("rank-100-input", ["invalid model", "rank 100"]),
    ("not-utf8-name", ["invalid model", "not UTF-8", "\\xff"]),
]


#: the most work (:func:`hostile.steps`) a refusal of a small bad model may take, the first one's
#: imports apart: reading the model and finding what is wrong with it, not checking its nodes
REFUSAL_STEPS = 20_000

_REFUSED_EACH = (
    STEPS_SOURCE
    + """
import re
from bcast.check import CheckInputError, check
bad = []
steps(lambda: check(CASES[0][1]), (Exception,))  # the imports of the first check
for kind, path, words in CASES:
    caught = []
    def run():
        try:
            check(path)
        except BaseException as e:
            caught.append(e)
    n = steps(run)
    e = caught[0] if caught else None
    if e is None:
        bad.append((kind, "checked, not refused"))
    elif isinstance(e, CheckInputError):
        m = str(e)
        if not all(w.lower() in m.lower() for w in words) or re.search("[\\x00-\\x1f\\x7f-\\x9f]", m):
            bad.append((kind, m[:300]))
        elif len(m.encode()) >= 2000 or n > REFUSAL_STEPS:
            bad.append((kind, f"{len(m.encode())} bytes, {n:,} steps"))
    else:
        bad.append((kind, f"{type(e).__name__}: {str(e)[:300]}"))
bad
""".replace("REFUSAL_STEPS", repr(REFUSAL_STEPS))
)


def _refused_each(cases: list[tuple[str, str, Sequence[str]]]) -> None:
    """``check`` refuses every model with a CheckInputError naming ``words``; all in one limited child."""
    out = attack(_REFUSED_EACH.replace("CASES", repr(cases)), timeout=60, memory=SMALL)
    assert out.outcome == "returned", str(out)
    assert out.value == "[]", out.value


def test_an_onnx_graph_that_is_no_graph_is_refused(tmp_path: Path) -> None:
    """Never "no problems found": each is an invalid model, in one line, found without allocating a thing
    (the dims 2**62 are never allocated: the child has 1 GiB)."""
    _onnx()
    _refused_each([(k, _save(_bad_onnx(k), tmp_path / f"{k}.onnx"), words) for k, words in BAD_ONNX])


@pytest.mark.parametrize("kind", ["cycle", "dims-2**62-no-data", "not-utf8-name"])
def test_an_onnx_graph_that_is_no_graph_through_the_command(tmp_path: Path, kind: str) -> None:
    _onnx()
    run = _check(_save(_bad_onnx(kind), tmp_path / "m.onnx"), memory=SMALL)
    assert_cli_refused(run, contains=dict(BAD_ONNX)[kind])
    assert "no problems" not in run.stdout


def _bad_node(kind: str) -> Any:
    from onnx import helper, numpy_helper

    x, y = _vi("x", [2, 3]), _vi("y", [2, 3])
    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    if kind == "add-with-one-input":
        return _model([helper.make_node("Add", ["x"], ["y"], name="lonely")], [x], [y])
    if kind == "gemm-string-attribute":
        node = helper.make_node("Gemm", ["x", "w"], ["y"], name="lonely", transA="yes")
        w = numpy_helper.from_array(np.ones((3, 2), np.float32), "w")
        return _model([node], [x], [_vi("y", [2, 2])], [w])
    if kind == "negative-value-info":
        return _model([_add("x", "x", "y", "lonely")], [x], [y], value_info=[_vi("y", [2, -5])])
    if kind == "legacy-axis-huge":
        node = helper.make_node("Add", ["x", "b"], ["y"], name="lonely", broadcast=1, axis=10**18)
        return _model([node], [x], [y], [b], opset=6)
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["add-with-one-input", "gemm-string-attribute", "legacy-axis-huge", "negative-value-info"]
)
def test_a_node_onnx_would_refuse_is_a_finding(tmp_path: Path, kind: str) -> None:
    """Never "no problems" (exit 0), never a crash: a finding, and the rest of the model is checked."""
    _onnx()
    run = _check(_save(_bad_node(kind), tmp_path / "m.onnx"), "--quiet")
    _assert_status(run, 1)
    want = "'y' declares the negative dim -5" if kind == "negative-value-info" else "lonely ("
    assert want in run.stdout


def _bad_ir(kind: str) -> tuple[str, bytes | None]:
    a = [_param(0, "a", [2]), _param(1, "b", [2])]
    add = _layer(2, "add", "Add", 'auto_broadcast="numpy"', ins=[[2], [2]], outs=[[2]])
    ok_edges = [_edge(0, 0, 2, 0), _edge(1, 0, 2, 1)]
    if kind == "edge-to-missing-layer":
        return _net([*a, add], [*ok_edges, _edge(0, 0, 7, 0)]), None
    if kind == "edge-to-missing-port":
        return _net([*a, add], [_edge(0, 0, 2, 0), _edge(1, 5, 2, 1)]), None
    if kind == "duplicate-layer-id":
        return _net([*a, add.replace('id="2"', 'id="1"')], []), None
    if kind == "two-edges-into-a-port":
        return _net([*a, add], [*ok_edges, _edge(0, 0, 2, 1)]), None
    if kind == "cycle":
        add2 = _layer(3, "add2", "Add", 'auto_broadcast="numpy"', ins=[[2], [2]], outs=[[2]])
        return _net(
            [a[0], add, add2], [_edge(0, 0, 2, 0), _edge(3, 2, 2, 1), _edge(2, 2, 3, 0), _edge(0, 0, 3, 1)]
        ), None
    if kind == "self-edge":
        return _net([a[0], add], [_edge(0, 0, 2, 0), _edge(2, 2, 2, 1)]), None
    if kind == "dim-10**30":
        big = _layer(2, "add", "Add", 'auto_broadcast="numpy"', ins=[[10**30], [2]], outs=[[2]])
        return _net([*a, big], ok_edges), None
    if kind == "rank-100-port":
        big = _layer(2, "add", "Add", 'auto_broadcast="numpy"', ins=[[1] * 100, [2]], outs=[[2]])
        return _net([*a, big], ok_edges), None
    if kind == "const-dims-overflow":
        c = _layer(1, "b", "Const", f'element_type="f32" shape="{2**62},4" offset="0" size="8"', outs=[[2]])
        return _net([a[0], c, add], ok_edges), b"\0" * 8
    if kind == "const-past-the-bin":
        c = _layer(1, "b", "Const", f'element_type="f32" shape="2" offset="{10**12}" size="8"', outs=[[2]])
        return _net([a[0], c, add], ok_edges), b"\0" * 8
    if kind == "no-layers":
        return _net([], []), None
    raise AssertionError(kind)


BAD_IR = [
    ("edge-to-missing-layer", "layer 7, which does not exist"),
    ("edge-to-missing-port", "no such port"),
    ("duplicate-layer-id", "two layers have id 1"),
    ("two-edges-into-a-port", "two incoming edges"),
    ("cycle", "cycle"),
    ("self-edge", "cycle"),
    ("dim-10**30", "dim 0"),
    ("rank-100-port", "more than 64 dims"),
    ("const-dims-overflow", "does not match"),
    ("const-past-the-bin", "past the end"),
    ("no-layers", "no layers"),
]


def test_an_ir_that_is_no_graph_is_refused(tmp_path: Path) -> None:
    cases = []
    for kind, words in BAD_IR:
        xml, weights = _bad_ir(kind)
        (tmp_path / kind).mkdir()
        cases.append((kind, _write_ir(tmp_path / kind, xml, weights), [words]))
    _refused_each(cases)


@pytest.mark.parametrize("kind", ["cycle", "dim-10**30"])
def test_an_ir_that_is_no_graph_through_the_command(tmp_path: Path, kind: str) -> None:
    xml, weights = _bad_ir(kind)
    run = _check(_write_ir(tmp_path, xml, weights), memory=SMALL)
    assert_cli_refused(run, contains=[dict(BAD_IR)[kind]])
    assert "no problems" not in run.stdout


def test_an_ir_attribute_out_of_any_range_is_a_finding(tmp_path: Path) -> None:
    """A pdpd axis of 10**20: the layer is invalid (exit 1), not a crash."""
    xml = _ir_add([2, 3], [3], [2, 3]).replace(
        'auto_broadcast="numpy"', f'auto_broadcast="pdpd" auto_broadcast.auto_broadcast_axis="{10**20}"'
    )
    run = _check(_write_ir(tmp_path, xml), "--quiet")
    _assert_status(run, 1)
    assert "add (Add)" in run.stdout


# ================================================================================================
# 4. output that a name can forge


def _no_forged_line(text: str) -> None:
    """No control character, and the forged "0 problems found" never starts a line of its own."""
    assert_clean_text(text, "output")
    assert not any(ln.startswith(("0 problems", "ok")) for ln in text.splitlines()), text[:1000]
    assert "\\x1b[2J" in text, "the name should be shown, escaped"


@pytest.mark.parametrize("how", ["text", "quiet", "json"])
def test_onnx_names_cannot_drive_the_terminal(tmp_path: Path, how: str) -> None:
    _onnx()
    path = _save(_clash_model(name=FORGED, tensor=f"t{FORGED}"), tmp_path / "m.onnx")
    extra = {"text": ["--color", "never"], "quiet": ["--quiet"], "json": ["--json"]}[how]
    run = _check(path, *extra)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    if how == "json":
        assert_clean_text(run.stdout, "stdout")
        report = json.loads(run.stdout)
        assert report["problems"][0]["node"] == FORGED  # JSON carries the name exactly, escaped by json
    else:
        _no_forged_line(run.stdout)


def test_a_model_path_cannot_drive_the_terminal(tmp_path: Path) -> None:
    _onnx()
    d = tmp_path / f"dir{ESC}\r"
    d.mkdir()
    path = _save(_clash_model(), d / f"m{ESC}.onnx")
    run = _check(path, "--color", "never")
    assert run.returncode == 1
    _no_forged_line(run.stdout)
    missing = command(["check", str(d / f"gone{ESC}\n0 problems found.onnx")])
    assert_cli_refused(missing, contains=["no such file", "\\x1b[2J"])


def test_names_in_an_invalid_model_message_are_escaped(tmp_path: Path) -> None:
    _onnx()
    model = _model([_add("x", FORGED, "y", FORGED)], [_vi("x", [2])], [_vi("y", [2])])
    run = _check(_save(model, tmp_path / "m.onnx"))
    assert_cli_refused(run, contains=["invalid model", "\\x1b[2J", "\\x0d", "\\n", "\\x07", "\\x00"])


def test_ir_names_and_types_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """XML 1.0 refuses ESC even as &#27;, but takes CR, LF, the 8-bit CSI (U+009B) and bidi overrides."""
    xml = _ir_add([4], [5], [4], name="NAME", kind="KIND")
    xml = xml.replace("NAME", "&#x9b;2J&#13;ok&#10;0 problems found&#x202e;").replace("KIND", "Add&#x9b;31m&#10;")
    run = _check(_write_ir(tmp_path, xml), "--color", "never")
    assert run.returncode == 1, run.stderr
    assert_clean_text(run.stdout, "stdout")
    assert not any(ln.startswith(("0 problems", "ok", "31m")) for ln in run.stdout.splitlines()), run.stdout
    assert "\\x9b2J\\x0dok\\n0 problems found\\u202e" in run.stdout and "\u202e" not in run.stdout
    run = _check(_write_ir(tmp_path, xml.replace('id="1"', 'id="2"'), name="dup"))
    assert_cli_refused(run, contains=["two layers have id 2", "\\x9b2J"])


def test_shapes_modes_and_files_in_infer_and_explain_are_escaped(tmp_path: Path) -> None:
    runs = [
        command(["infer", f"[{ESC}]", "[1]"]),
        command(["explain", "[3]", "[4]", "--mode", f"numpy{ESC}"]),
        command(["explain", "[3]", "[3]", "--svg", str(tmp_path / "no" / f"{ESC}.svg")]),
    ]
    for run in runs:
        assert run.returncode in (1, 2) and "Traceback" not in run.stderr, run.stderr
        assert_clean_text(run.stdout + run.stderr)
        assert "\\x1b" in run.stdout + run.stderr


# ================================================================================================
# 5. the exit status survives a closed stdout


def _closed_stdout(args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    """``bcast ARGS`` writing into a pipe whose reader has already left (as ``| head -1`` leaves)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(
            [sys.executable, "-m", "bcast", *args],
            stdout=w,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    finally:
        os.close(w)


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["check", "--sample"], 1),
        (["check", "--sample", "--json"], 1),
        (["infer", "[3,1]", "[4,4]"], 1),
        (["explain", "[3,1]", "[4,4]"], 1),
        (["infer", "[3,1]", "[1,4]", "[1,1]"], 0),
    ],
    ids=["check", "check-json", "infer-clash", "explain-clash", "infer-ok"],
)
def test_exit_status_survives_a_closed_pipe(args: list[str], status: int) -> None:
    if args[0] == "check":
        _onnx()
    p = _closed_stdout(args)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == status, err
    assert "BrokenPipe" not in err and "Exception ignored" not in err and "Traceback" not in err, err


def test_exit_status_of_a_clean_model_and_an_unreadable_one_survive_a_closed_pipe(tmp_path: Path) -> None:
    _onnx()
    clean = _save(_clean_model(), tmp_path / "m.onnx")
    assert _closed_stdout(["check", clean]).returncode == 0
    p = _closed_stdout(["check", str(tmp_path / "gone.onnx"), "--json"])
    assert p.returncode == 2 and b"Exception ignored" not in p.stderr


# ================================================================================================
# 6. a crash inside bcast is an internal error, never "cannot read the model"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def _boom(*_: object, **__: object) -> Any:
    raise KeyError("a bug")


def test_a_crash_in_the_onnx_checker_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _onnx()
    import bcast.check.pipeline as pipeline

    monkeypatch.setattr(pipeline, "propagate", _boom)
    rc, out, err = _run(capsys, "check", "--sample")
    assert rc == 3 and out == ""
    assert err.count("\n") == 1 and "internal error" in err and "bug of bcast" in err and "--debug" in err, err
    assert "cannot read" not in err and "KeyError" in err and "Traceback" not in err
    rc, out, err = _run(capsys, "check", "--sample", "--debug")
    assert rc == 3 and "Traceback" in err and "_boom" in err and "internal error" in err
    rc, out, _ = _run(capsys, "check", "--sample", "--json")
    assert rc == 3 and json.loads(out)["status"] == 3


def test_a_crash_in_the_ir_checker_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import bcast.check.pipeline as pipeline

    monkeypatch.setattr(pipeline, "propagate", _boom)
    rc, _, err = _run(capsys, "check", _write_ir(tmp_path, _ir_add([2], [2], [2])))
    assert rc == 3 and "internal error" in err and "cannot read" not in err


def test_out_of_memory_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _onnx()
    import bcast.check.pipeline as pipeline

    def no_memory(*_: object, **__: object) -> Any:
        raise MemoryError

    monkeypatch.setattr(pipeline, "propagate", no_memory)
    rc, _, err = _run(capsys, "check", "--sample")
    assert rc == 2 and "out of memory while checking" in err and "MemoryError: " not in err


def test_a_crash_in_infer_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import bcast.cli as cli

    monkeypatch.setattr(cli, "elementwise_plan", _boom)
    rc, _, err = _run(capsys, "infer", "[2]", "[2]")
    assert rc == 3 and "internal error" in err and "Traceback" not in err
    rc, _, err = _run(capsys, "--debug", "infer", "[2]", "[2]")
    assert rc == 3 and "Traceback" in err


# ================================================================================================
# 7. argument abuse


#: arguments of about K bytes (10 MB in the test), as Python source (too long for exec: 128 KiB per
#: argument, so built in the child)
HUGE_ARGV = {
    "shape-dims": '["infer", "[" + "1," * (K // 2) + "1]", "[2]"]',
    "shape-digits": '["infer", "[" + "7" * K + "]", "[2]"]',
    "explain-mode": '["explain", "[1]", "[2]", "--mode", "\\x1b" * K]',
    "axes": '["infer", "[1]", "[2]", "--axes-mapping", "1," * (K // 2)]',
    "model-path": '["check", "m" * K + ".onnx"]',
    "option": '["--bogus" + "\\x1b" * K]',
}
_MAIN = """
import contextlib, io
from bcast.cli import main
def run(argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, len(out.getvalue().encode()), len(err.getvalue().encode()), err.getvalue()[:300] + out.getvalue()[:300]
"""


@pytest.mark.parametrize("argv", list(HUGE_ARGV.values()), ids=list(HUGE_ARGV))
def test_ten_megabyte_arguments(argv: str) -> None:
    """Given to main() in a child: a short answer, with no more work for 10 MB than for 10 KB."""
    out = attack(f"{_MAIN}\nK = 10_000_000\nrun({argv})", timeout=30)
    rc, n_out, n_err, text = eval(assert_returned(out))  # a tuple of literals, from our own child
    assert rc in (1, 2) and n_out < MESSAGE_BYTES and n_err < MESSAGE_BYTES, out.value
    assert_clean_text(text)
    calls = [f"run({argv.replace('K', str(k))})" for k in (1000, 10_000, 10_000_000)]
    _, small, large = counted(_MAIN, calls, timeout=60)
    assert large <= small + 200, f"{small:,} steps for 10 KB, {large:,} for 10 MB"


@pytest.mark.parametrize(
    "argv",
    [
        ["infer", "[" + "1," * 50_000 + "1]", "[2]"],
        ["explain", "[" + "N" * 120_000 + "]", "[2]"],
        ["check", "\udcff\udcfe" + "x" * 100_000 + ".onnx"],
        ["check", "m\udcff.onnx"],
        ["infer", "[\udcff]", "[1]"],
        ["check", "--\x1b[2J"],
        ["check", "m.onnx", "--color", "\x1b[2J"],
        ["explain", "[1]", "[2]", "--axis", "9" * 5000],
        ["frobnicate"],
    ],
    ids=[
        "100k-dims",
        "120k-symbol",
        "long-bad-path",
        "not-utf8-path",
        "not-utf8-shape",
        "escape-option",
        "escape-choice",
        "5000-digit-axis",
        "unknown-command",
    ],
)
def test_argument_abuse_through_the_real_command(argv: list[str]) -> None:
    run = command(argv)
    assert run.returncode in (1, 2), run
    assert "Traceback" not in run.stderr and len(run.stderr.encode()) < MESSAGE_BYTES, run.stderr[:500]
    assert len(run.stdout.encode()) < 4 * MESSAGE_BYTES
    assert_clean_text(run.stdout + run.stderr)
    assert run.stderr.count("\n") <= 1, run.stderr


def test_errno_words_cover_the_common_cases() -> None:
    """The words for errors of stat/open (no child: pure text)."""
    from bcast.files import os_error_text

    assert os_error_text("m.onnx", OSError(errno.ELOOP, "x")).endswith("symlink loop?)")
    assert os_error_text(f"m{ESC}.onnx", OSError(errno.EACCES, "x")) == "m\\x1b[2J\\x1b[1;1H.onnx: permission denied"


def test_the_caps_and_exit_statuses_are_documented_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    from bcast.files import MAX_MODEL_RANK as MAX_RANK

    rc, out, _ = _run(capsys, "check", "--help")
    text = " ".join(out.split())
    assert rc == 0 and f"{MAX_ONNX_BYTES >> 30} GiB" in text and f"{MAX_XML_BYTES >> 20} MiB" in text
    assert f"at most {MAX_RANK} values" in text and f"at most {MAX_NESTING} deep" in text
    assert "3 an internal error" in text and "--debug" in text and "2 a model cannot be" in text
    rc, out, _ = _run(capsys, "--help")
    assert rc == 0 and "3 an internal error" in " ".join(out.split())


# ================================================================================================
# 8. arguments that are no shape or no mode, and a picture nobody reads


@pytest.mark.parametrize(
    "argv",
    [
        ["infer", "[2,3]", "[4,x-]"],
        ["infer", "[2]", "[2]", "--mode", "nope"],
        ["explain", "[2,3]", "[[4,3]]"],
        ["explain", "[2]", "[2]", "--mode", f"numpy{ESC}"],
    ],
    ids=["bad-dim", "unknown-mode", "nested-brackets", "escaped-mode"],
)
def test_an_argument_that_is_no_shape_or_mode_is_bad_input_not_a_clash(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    rc, out, err = _run(capsys, *argv)
    assert rc == 2, (rc, out, err)
    assert err.count("\n") == 1 and err.startswith(f"bcast {argv[0]}: error: "), err
    assert_clean_text(err)
    # a real clash stays exit 1: the shapes were read, and they do not broadcast
    assert _run(capsys, argv[0], "[3]", "[4]")[0] == 1


def test_a_picture_written_to_a_fifo_nobody_reads_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "picture.svg"
    os.mkfifo(fifo)
    run = command(["explain", "[1,3]", "[4,3]", "--svg", str(fifo)], timeout=20)
    assert run.returncode == 2 and "no process reads" in run.stderr, run.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import bcast

    rc, out, _ = _run(capsys, "--version")
    assert rc == 0 and out.strip() == f"bcast {bcast.__version__}"


def test_reader_errors_are_broadcast_errors(tmp_path: Path) -> None:
    """Every refusal of bad input is a BroadcastError (a ValueError), the readers' own included."""
    from bcast import BroadcastError
    from bcast.check.report import CheckInputError
    from bcast.openvino.ir_read import IRError, parse_ir, read_ir

    assert issubclass(IRError, BroadcastError) and issubclass(CheckInputError, BroadcastError)
    with pytest.raises(BroadcastError, match="not well-formed"):
        parse_ir(b"\xff\xfe garbage")
    with pytest.raises(TypeError, match="read_ir: xml_path must be a path"):
        read_ir(12)  # type: ignore[arg-type]
    os.mkfifo(tmp_path / "m.xml")
    with pytest.raises(BroadcastError, match="is a FIFO"):
        read_ir(tmp_path / "m.xml")


# ================================================================================================
# 9. models whose ONNX shape inference would explode, stdout that cannot be written, odd XML text


def test_functions_that_expand_exponentially_are_refused_quickly(tmp_path: Path) -> None:
    """F_k calls F_(k-1) twice: ONNX's inference would walk 2**k bodies (K=22: 24 s; K=39: forever)."""
    _onnx()
    import numpy as np
    from onnx import helper, numpy_helper

    def function_chain(k_max: int) -> Any:
        fs = [helper.make_function("dom", "F0", ["a"], ["o"], [_add("a", "a", "o")], [helper.make_opsetid("", 17)])]
        for k in range(1, k_max + 1):
            body = [
                helper.make_node(f"F{k - 1}", ["a"], ["m"], domain="dom"),
                helper.make_node(f"F{k - 1}", ["m"], ["o"], domain="dom"),
            ]
            opsets = [helper.make_opsetid("", 17), helper.make_opsetid("dom", 1)]
            fs.append(helper.make_function("dom", f"F{k}", ["a"], ["o"], body, opsets))
        b = numpy_helper.from_array(np.ones(3, np.float32), "b")
        nodes = [helper.make_node(f"F{k_max}", ["x"], ["z"], domain="dom"), _add("x", "b", "y", "n")]
        m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])], [b])
        m.functions.extend(fs)
        m.opset_import.add(domain="dom", version=1)
        return m

    run = command(["check", _save(function_chain(39), tmp_path / "deep.onnx")], timeout=30)
    assert_cli_refused(run, contains=["local functions expand"])
    small = command(["check", _save(function_chain(6), tmp_path / "small.onnx")], timeout=30)
    assert small.returncode == 0, small.stderr  # a few calls deep is an ordinary model


def test_shape_values_that_double_at_each_concat_do_not_explode(tmp_path: Path) -> None:
    """Shape -> Concat(s, s) thirty times: ONNX's value propagation would need 2**30 values (24 GB)."""
    _onnx()
    import numpy as np
    from onnx import helper, numpy_helper

    nodes = [helper.make_node("Shape", ["x"], ["s0"])]
    nodes += [helper.make_node("Concat", [f"s{i}", f"s{i}"], [f"s{i + 1}"], axis=0) for i in range(30)]
    nodes.append(_add("x", "b", "y", "n"))
    b = numpy_helper.from_array(np.ones(4, np.float32), "b")
    path = _save(_model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])], [b]), tmp_path / "doubling.onnx")
    run = command(["check", path], timeout=30, memory=2 << 30)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr  # the clash 3 vs 4 is still found


_STATUSES = [
    (["check", "--sample"], 1),
    (["check", "--sample", "--json"], 1),
    (["infer", "[2,3]", "[4]"], 1),
    (["explain", "[2,3]", "[3]"], 0),
    (["check", "missing.onnx"], 2),
]


#: every command with its stdout closed, and the check (a process each) with its stdout full; the other commands with
#: a full stdout in the full suite
@pytest.mark.parametrize(
    ("target", "args", "status"),
    [
        pytest.param(
            target, args, status, id=f"{target}-{'-'.join(args)}",
            marks=() if target == "closed" or k == 0 else pytest.mark.full,
        )
        for target in ("closed", "full")
        for k, (args, status) in enumerate(_STATUSES)
    ],
)  # fmt: skip
def test_the_exit_status_survives_stdout_closed_or_full(target: str, args: list[str], status: int) -> None:
    """`bcast check m.onnx >&-` or `> /dev/full`: the check's status, never an internal error."""
    if target == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    if target == "full":
        stdout, extra = "open('/dev/full', 'w')", ""
    else:  # the child starts with its stdout closed, as after `>&-`
        stdout, extra = "None", ", preexec_fn=lambda: os.close(1)"
    code = (
        "import os, subprocess, sys\n"
        f"r = subprocess.run([sys.executable, '-m', 'bcast', *{args!r}], stdout={stdout}, "
        f"stderr=subprocess.PIPE, text=True{extra})\n"
        "(r.returncode, r.stderr)"
    )
    out = attack(code, timeout=60)
    value = assert_returned(out)
    assert value.startswith(f"({status}, "), value
    assert "internal error" not in value and "Traceback" not in value, value


def test_parse_ir_of_text_no_file_could_hold_is_an_ir_error() -> None:
    from bcast import BroadcastError
    from bcast.openvino.ir_read import parse_ir

    with pytest.raises(BroadcastError, match="lone surrogate"):
        parse_ir('<net name="\udcff"/>')


def _if_model(then_nodes: list[Any], then_out: str) -> Any:
    from onnx import TensorProto, helper

    then = helper.make_graph(then_nodes, "then", [], [_vi(then_out, [3])])
    other = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [], [_vi("e", [3])])
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    nodes = [
        helper.make_node("Neg", ["x"], ["w"], name="neg"),
        helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other),
    ]
    return _model(nodes, [_vi("x", [3]), cond], [_vi("y", [3])])


_BAD_BODIES = {
    "cycle": ([("Add", ["t2", "w"], ["t1"]), ("Add", ["t1", "w"], ["t2"])], "t1", "has a cycle"),
    "unproduced": ([("Add", ["x", f"nope{ESC}"], ["t"])], "t", "nothing in the body nor before it"),
    "own-output": ([("Add", ["x", "y"], ["t"])], "t", "reads 'y', which nothing"),
    "twice": ([("Add", ["x", "w"], ["t"]), ("Mul", ["x", "w"], ["t"])], "t", "produced twice"),
}


@pytest.mark.parametrize("case", list(_BAD_BODIES))
def test_an_if_body_that_is_no_graph_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    _onnx()
    from onnx import helper

    specs, out, words = _BAD_BODIES[case]
    nodes = [helper.make_node(op, ins, outs, name=f"b{k}") for k, (op, ins, outs) in enumerate(specs)]
    rc, _, err = _run(capsys, "check", _save(_if_model(nodes, out), tmp_path / "m.onnx"))
    assert rc == 2 and words in err and "the body of node if (If)" in err, err
    assert_clean_text(err)


def test_an_if_body_reading_names_of_the_enclosing_graph_is_fine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    onnx = _onnx()
    from onnx import helper

    model = _if_model([helper.make_node("Add", ["x", "w"], ["t"])], "t")
    onnx.checker.check_model(model, full_check=True)  # ONNX's own checker agrees it is valid
    rc, out, err = _run(capsys, "check", _save(model, tmp_path / "ok.onnx"))
    assert rc == 0 and "no problems" in out, (out, err)


def test_ir_digits_are_ascii_and_an_empty_svg_path_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Python's int() reads '١٦' as 16; OpenVINO reads ASCII digits only. An empty --svg path is no path."""
    xml = _ir_add([16], [16], [16]).replace("<dim>16</dim>", "<dim>\u0661\u0666</dim>", 1)
    rc, _, err = _run(capsys, "check", _write_ir(tmp_path, xml))
    assert rc == 2 and "not a size" in err, err
    rc, _, err = _run(capsys, "explain", "[1]", "[2]", "--svg", "")
    assert rc == 2 and "cannot write the picture" in err, err
