"""``bcast check``'s entry point: one pipeline, each stage in one place, a model passing down it once.

    model -> :func:`bcast.files.model_source` (what it is: a path, bytes, an ``onnx.ModelProto``, an IR)
          -> read: :func:`bcast.onnx.reader.read_onnx` or the IR's reader -> a validated neutral graph
          -> :func:`~bcast.check.pipeline.check_graph`: propagate (:mod:`bcast.graph`: findings, root
             causes) -> :class:`~bcast.check.report.Report`

The stages after the reader, and the calls to ``progress``, are :mod:`bcast.check.pipeline`'s, for
both formats (:func:`~bcast.check.pipeline.check_graph` is the IR's too, once
:mod:`bcast.check.ir_model` calls it).

An OpenVINO IR (an ``.xml`` path) is checked by :func:`~bcast.check.ir_model.check_ir`. The package
:mod:`bcast.check` re-exports both names defined here.
"""

from __future__ import annotations

import os
from typing import Any, overload

from ..files import CheckInputError, ModelSource, model_source
from ..graph.sizes import Sizes, SizesLike, read_sizes
from ..onnx.graph_read import onnx_arity, onnx_fallback, unsupported
from ..onnx.reader import read_onnx
from .failure import CheckFailure
from .ir_model import check_ir
from .pipeline import Progress, check_graph, no_cycle_collection, read_graph
from .report import Problem, Report

__all__ = ["check", "sample_model_path"]


def sample_model_path() -> str:
    """The small ONNX model shipped with bcast: symbolic dims and one deliberate broadcasting bug."""
    return os.path.join(os.path.dirname(__file__), "data", "sample.onnx")


@overload
def check(
    model: list[Any] | tuple[Any, ...],
    *,
    dims: SizesLike = None,
    progress: Progress | None = None,
    debug: bool = False,
    strict_dims: bool = True,
) -> list[Report | CheckFailure]: ...


@overload
def check(
    model: Any,
    *,
    dims: SizesLike = None,
    progress: Progress | None = None,
    debug: bool = False,
    strict_dims: bool = True,
) -> Report: ...


def check(
    model: Any,
    *,
    dims: SizesLike = None,
    progress: Progress | None = None,
    debug: bool = False,
    strict_dims: bool = True,
) -> Report | list[Report | CheckFailure]:
    """Check an ONNX model or an OpenVINO IR for broadcasting bugs, reading shapes, never weights.

    ``model`` is a path (an ``.onnx`` file, or an IR's ``.xml`` with its ``.bin`` beside it), the
    bytes of an ONNX model, an ``onnx.ModelProto`` or an ``openvino.Model`` (saved as an IR to a
    temporary folder, and checked there); or a list of these, checked one after the other: a list of
    their reports, a model that cannot be read being a :class:`~bcast.check.failure.CheckFailure` in
    its place (:func:`bcast.check.check_many` checks many paths in parallel). ``progress(phase, done, total)``, when
    given, is called as the check goes ("read", "propagate", "check"). ``debug`` lets an error
    inside a shape function propagate instead of being reported as a node left unchecked.
    ``dims`` gives the model's symbols sizes (``{"S": 128}``) or ranges (``{"S": "1..512"}``, ``(1, 512)``,
    ``"8.."``): see :mod:`bcast.graph.sizes`; an IR's unnamed dims are named after input and axis
    (``input_ids_1``). A name of ``dims`` the model lacks is bad input, unless ``strict_dims`` is false (sizes
    shared by many models, each naming its own).

    Raises :class:`CheckInputError` (one line, safe to print) for a model that cannot be read or is
    not a valid graph: a missing file (then also a ``FileNotFoundError``), not a regular file, too
    large, truncated, not a model (a checkpoint, an HDF5 file... said as such), a cycle, a tensor
    that nothing produces, and so on (see :mod:`bcast.onnx.reader`, :mod:`bcast.files`
    and :mod:`bcast.openvino.ir_read`).
    """
    sizes = read_sizes(dims)
    if isinstance(model, (list, tuple)):
        return [_one_of_many(m, sizes, debug) for m in model]
    source = model_source(model, "check")
    if source.kind == "openvino":
        return _check_ov_model(source.value, source.name, sizes, progress, debug, strict_dims)
    if source.format == "openvino-ir":
        return check_ir(source.value, dims=sizes, progress=progress, debug=debug, strict=strict_dims)
    with no_cycle_collection():  # the graph read is freed before the collector runs again
        return _check_onnx(source, sizes, progress, debug, strict_dims)


def _check_onnx(source: ModelSource, sizes: Sizes, progress: Progress | None, debug: bool, strict: bool) -> Report:
    read = read_graph(lambda: read_onnx(source), progress)
    extra = [Problem(f.tensor, f.where, f.kind, f.message) for f in read.findings]
    extra += [Problem(n.label, n.op, "unsupported", why) for n, why in unsupported(read.graph)]
    return check_graph(
        read.graph,
        fallback=onnx_fallback,
        name=read.name,
        fmt="onnx",
        extra=extra,
        progress=progress,
        debug=debug,
        arity=onnx_arity(read.graph),
        sizes=sizes,
        strict=strict,
    )


def _check_ov_model(model: Any, name: str, sizes: Any, progress: Progress | None, debug: bool, strict: bool) -> Report:
    """An ``openvino.Model`` checked as the IR that ``openvino.save_model`` writes of it."""
    import tempfile

    import openvino  # the model is one: openvino is installed

    with tempfile.TemporaryDirectory(prefix="bcast-") as folder:
        xml = os.path.join(folder, "model.xml")
        openvino.save_model(model, xml, compress_to_fp16=False)
        report = check_ir(xml, dims=sizes, progress=progress, debug=debug, strict=strict)
    report.model = name
    return report


def _one_of_many(model: Any, sizes: Any, debug: bool) -> Report | CheckFailure:
    """One model of a list given to :func:`check`: its report, or why it could not be checked."""
    from ..graph.sizes import SizesError

    name = model if isinstance(model, str) else getattr(model, "name", None) or type(model).__name__
    try:
        report: Report = check(model, dims=sizes, debug=debug, strict_dims=False)
    except (CheckInputError, SizesError) as e:
        return CheckFailure(str(name), f"cannot read the model: {e}", 2)
    return report
