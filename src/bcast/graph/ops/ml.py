"""The ops of the ``ai.onnx.ml`` domain (scikit-learn's exports): preprocessing, linear models, SVMs, trees.

Their inputs are ``[N, C]`` (a 1-D ``[C]`` is one sample) and their sizes are attributes: a Scaler's
``scale`` and ``offset``, a linear model's ``coefficients``. An attribute that contradicts the input's
features is a finding of kind ``shape-mismatch``, checked as onnxruntime checks it: an error where the
features are a known size, the latent form (:func:`require`) where they are a symbol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr
from ..model import Node, Origin, Value
from ._base import known, new_value, op_label, register, require, same_as, suspects_of

Dims = tuple[Expr, ...]

_ML = "ai.onnx.ml:"


def _count(node: Node, name: str) -> int:
    """How many values the list attribute ``name`` holds (0 when absent)."""
    v = node.attrs.get(name)
    if v is None:
        return 0
    return len(v) if isinstance(v, (list, tuple)) else 1


def _samples_features(x: Value) -> tuple[Expr, Expr, Origin | None] | None:
    """The samples and the features of an input as onnxruntime reads them: ``[C]`` is one sample of ``C``
    features, otherwise axis 0 counts samples and axis 1 features; with where the features were made."""
    if x.shape is None or not x.shape:
        return None
    if len(x.shape) == 1:
        return Expr.const(1), x.shape[0], x.origin(0)
    return x.shape[0], x.shape[1], x.origin(1)


def _suspects(node: Node, c: Expr, oc: Origin | None) -> list[Suspect]:
    """The node (its attribute holds the wrong length) and the features it contradicts."""
    return [Suspect(Origin(node.name, node.op)), *suspects_of((oc, c))]


def _needs(node: Node, ctx: Ctx, what: str, holds: Any, c: Expr, oc: Origin | None, want: str) -> None:
    """``holds(C)`` must be true of the features ``c``: an error when it fails at ``c``'s known size, the
    latent form when ``c`` is a symbol."""
    v = c.value
    if v is not None:
        if not holds(v):
            raise ShapeError(
                f"{op_label(node)}: {what} for the {v} features of its input ({want})",
                dims=(c,),
                suspects=_suspects(node, c, oc),
            )
        return
    require(
        node,
        ctx,
        "shape-mismatch",
        f"{what} for the {c} features of its input ({want})",
        lambda env: bool(holds(c.evaluate(env))),
        (c,),
        suspects=_suspects(node, c, oc),
    )


@register(_ML + "Scaler")
def _scaler(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """``(X - offset) * scale``: the two lists are one length (checked when the model loads), 1 or C."""
    x = known(ins[0] if ins else None)
    ns, no = _count(node, "scale"), _count(node, "offset")
    if ns == 0 or ns != no:
        raise ShapeError(
            f"{op_label(node)}: scale holds {ns} values and offset {no}: they must be one length, at least 1",
            dims=(ns, no),
            suspects=[Suspect(Origin(node.name, node.op))],
        )
    sf = _samples_features(x)
    if sf is not None and ns != 1:
        _, c, oc = sf
        _needs(node, ctx, f"scale and offset hold {ns} values", lambda v: v == ns, c, oc, "1 or one per feature")
    return [same_as(x, "float32")]


@register(_ML + "Normalizer", _ML + "Binarizer", _ML + "Imputer", _ML + "LabelEncoder", _ML + "CategoryMapper")
def _same_shape(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Ops that map each element (or each row) to one value: the input's shape."""
    x = known(ins[0] if ins else None)
    dtype = {"Normalizer": "float32", "Binarizer": x.dtype}.get(node.op)
    return [same_as(x, dtype)]


def _labels(node: Node) -> int:
    return _count(node, "classlabels_ints") or _count(node, "classlabels_strings") or _count(node, "classlabels_int64s")


def _label_dtype(node: Node) -> str:
    return "str" if _count(node, "classlabels_strings") else "int64"


@register(_ML + "LinearClassifier")
def _linear_classifier(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Labels ``[N]`` and scores ``[N, classes]``: coefficients hold one row of C per class (one per
    intercept); a binary model of one row scores both classes."""
    x = known(ins[0] if ins else None)
    classes = _count(node, "intercepts")
    sf = _samples_features(x)
    if sf is None or classes == 0:
        return [Value(_label_dtype(node), None), Value("float32", None)]
    n, c, oc = sf
    coef = _count(node, "coefficients")
    _needs(
        node, ctx, f"coefficients hold {coef} values", lambda v: coef >= classes * v, c, oc, f"{classes} per feature"
    )
    cols = 2 if classes == 1 and _labels(node) == 2 else classes
    o = Origin(node.name, node.op)
    return [
        new_value(_label_dtype(node), (n,), (x.origin(0),)),
        new_value("float32", (n, Expr.const(cols)), (x.origin(0), o)),
    ]


@register(_ML + "LinearRegressor")
def _linear_regressor(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """``[N, targets]``: coefficients hold one row of C per target."""
    x = known(ins[0] if ins else None)
    targets = node.attrs.get("targets", 1)
    sf = _samples_features(x)
    if sf is None or not isinstance(targets, int):
        return [Value("float32", None)]
    n, c, oc = sf
    coef = _count(node, "coefficients")
    _needs(
        node, ctx, f"coefficients hold {coef} values", lambda v: coef >= targets * v, c, oc, f"{targets} per feature"
    )
    return [new_value("float32", (n, Expr.const(targets)), (x.origin(0), Origin(node.name, node.op)))]


@register(_ML + "SVMClassifier")
def _svm_classifier(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Labels ``[N]`` and scores ``[N, ?]`` (their count depends on the kernel, the classes and whether
    probabilities are computed): the support vectors hold C values each."""
    x = known(ins[0] if ins else None)
    sf = _samples_features(x)
    if sf is None:
        return [Value(_label_dtype(node), None), Value("float32", None)]
    n, c, oc = sf
    vectors = sum(int(k) for k in node.attrs.get("vectors_per_class") or ())
    _support_vectors(node, ctx, vectors, c, oc)
    classes = _labels(node)
    cols = Expr.const(classes) if classes > 2 or _count(node, "prob_a") else ctx.fresh(f"{node.name}_scores")
    return [
        new_value(_label_dtype(node), (n,), (x.origin(0),)),
        new_value("float32", (n, cols), (x.origin(0), Origin(node.name, node.op))),
    ]


def _support_vectors(node: Node, ctx: Ctx, vectors: int, c: Expr, oc: Origin | None) -> None:
    """A kernel SVM's support vectors are ``vectors`` rows of C values."""
    held = _count(node, "support_vectors")
    if vectors <= 0 or held == 0:
        return
    _needs(
        node,
        ctx,
        f"support_vectors hold {held} values",
        lambda v: held == vectors * v,
        c,
        oc,
        f"{vectors} rows of one per feature",
    )


@register(_ML + "SVMRegressor")
def _svm_regressor(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """``[N, 1]``: the support vectors hold C values each."""
    x = known(ins[0] if ins else None)
    sf = _samples_features(x)
    if sf is None:
        return [Value("float32", None)]
    n, c, oc = sf
    vectors = node.attrs.get("n_supports", 0)
    _support_vectors(node, ctx, vectors if isinstance(vectors, int) else 0, c, oc)
    return [new_value("float32", (n, Expr.const(1)), (x.origin(0), Origin(node.name, node.op)))]


def _trees_features(node: Node, ctx: Ctx, x: Value, attr: str) -> Expr | None:
    """The samples of a tree ensemble's input; each split's feature index must be below C."""
    sf = _samples_features(x)
    if sf is None:
        return None
    n, c, oc = sf
    ids = [int(i) for i in node.attrs.get(attr) or ()]
    if ids:
        top = max(ids)
        _needs(node, ctx, f"a split reads feature {top}", lambda v: top < v, c, oc, f"at least {top + 1}")
    return n


@register(_ML + "TreeEnsembleClassifier")
def _tree_classifier(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Labels ``[N]`` and scores ``[N, classes]``."""
    x = known(ins[0] if ins else None)
    n = _trees_features(node, ctx, x, "nodes_featureids")
    if n is None:
        return [Value(_label_dtype(node), None), Value("float32", None)]
    classes = _labels(node)
    cols = Expr.const(classes) if classes > 2 else ctx.fresh(f"{node.name}_scores")  # binary: 1 or 2 columns
    return [
        new_value(_label_dtype(node), (n,), (x.origin(0),)),
        new_value("float32", (n, cols), (x.origin(0), Origin(node.name, node.op))),
    ]


@register(_ML + "TreeEnsembleRegressor", _ML + "TreeEnsemble")
def _tree_regressor(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """``[N, targets]`` (``n_targets``)."""
    x = known(ins[0] if ins else None)
    n = _trees_features(node, ctx, x, "nodes_featureids")
    targets = node.attrs.get("n_targets", 1)
    if n is None or not isinstance(targets, int):
        return [Value(x.dtype or "float32", None)]
    return [new_value(x.dtype or "float32", (n, Expr.const(targets)), (x.origin(0), Origin(node.name, node.op)))]


@register(_ML + "ArrayFeatureExtractor")
def _array_feature_extractor(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """X's last axis replaced by the count of indices (``[1, count]`` for a 1-D X), as onnxruntime does."""
    x, y = known(ins[0] if ins else None), known(ins[1] if len(ins) > 1 else None)
    if x.shape is None or not x.shape or y.shape is None:
        return [Value(x.dtype, None)]
    count = Expr.const(1)
    for d in y.shape:
        count = count * d
    lead: Dims = x.shape[:-1] if len(x.shape) > 1 else (Expr.const(1),)
    return [new_value(x.dtype, (*lead, count), (*(x.origin(k) for k in range(len(lead))), None))]


@register(_ML + "ZipMap", _ML + "DictVectorizer", _ML + "CastMap")
def _maps(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Ops on maps and sequences of maps: a value of no tensor shape (a sequence), or ``[?, count]``."""
    if node.op == "ZipMap":
        return [Value("sequence", None)]
    count = _count(node, "string_vocabulary") or _count(node, "int64_vocabulary")
    if node.op == "CastMap":
        size = node.attrs.get("max_map", 1)
        sparse = node.attrs.get("map_form", "DENSE") in ("SPARSE", b"SPARSE")
        count = int(size) if sparse and isinstance(size, int) else 0
    cols = Expr.const(count) if count else ctx.fresh(f"{node.name}_1")
    return [new_value(None, (ctx.fresh(f"{node.name}_0"), cols))]


@register(_ML + "OneHotEncoder")
def _one_hot_encoder(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """X's shape and one more axis, of one element per category."""
    x = known(ins[0] if ins else None)
    cats = _count(node, "cats_int64s") or _count(node, "cats_strings")
    if x.shape is None:
        return [Value("float32", None)]
    return [new_value("float32", (*x.shape, Expr.const(cats)), (*(x.origin(k) for k in range(len(x.shape))), None))]


@register(_ML + "FeatureVectorizer")
def _feature_vectorizer(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """``[N, sum(inputdimensions)]``: each input is cut or padded to its dimension."""
    x = known(ins[0] if ins else None)
    dims: Sequence[Any] = node.attrs.get("inputdimensions") or ()
    total = sum(int(d) for d in dims)
    sf = _samples_features(x)
    n = sf[0] if sf is not None else ctx.fresh(f"{node.name}_0")
    return [new_value("float32", (n, Expr.const(total)), (x.origin(0) if sf else None, Origin(node.name, node.op)))]
