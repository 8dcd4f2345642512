/* bcast.graph._walk: the short way of bcast.graph.propagate's loop, compiled.
 *
 * propagate() walks the nodes in order; most nodes of a model find nothing and lie downstream of nothing found,
 * and for those the loop only gathers the node's inputs, calls its op's shape function and stores its outputs
 * (each given its origins and compared with the file's annotation). In Python that bookkeeping costs as much as
 * the shape function it wraps. plain() does the same steps here, node after node, and hands the node back to
 * Python at the first step that is not plain; propagate.py's own loop is the reference (tests/test_graph_walk.py
 * shows the two give the same values, findings and records on every model of the repository).
 *
 * plain(nodes, start, vals, ctx, per_op, functions, declared, findings, fallback, unknown, with_origins,
 *       against_declared, progress, total, value_type) -> (i, left)
 *
 * runs nodes[start:] while each is plain and returns where it stopped: i == len(nodes) when it ran them all;
 * else node i, with left None when it was not run (its op not yet in per_op, a call of a model-local function,
 * no shape function, inputs outside its op's rule), or (ins, result, raised, before) when it was run and the rest
 * is Python's: result is the outputs the shape function returned (raised False) or the exception it raised (raised
 * True; a RecursionError, and anything that is not an Exception, goes up at once), before the number of findings
 * before the node ran. per_op maps (domain, op) to (fn, rule, lo, hi), fn never None; functions is the model's
 * local functions by (domain, op) or None; progress(i, total) is called every 64 nodes as Python's loop does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *str_inputs, *str_outputs, *str_domain, *str_op, *str_shape, *str_origins, *str_node, *str_values,
    *str_fallback, *str_value, *str_dtype, *str_data, *str_data_origins;

/* 1 when none of the tuple's items is None, 0 when one is; the tuple must be one */
static int none_missing(PyObject *t) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++)
        if (PyTuple_GET_ITEM(t, k) == Py_None) return 0;
    return 1;
}

/* 1 when the value's origins are one per axis of its shape, none of them None: propagate._with_origins returns it as
 * it is; 2 when it has none; 0 when it has some (Python's way fills them in); -1 with an error set */
static int own_origins(PyObject *v, PyObject *shape) {
    PyObject *origins = PyObject_GetAttr(v, str_origins);
    if (origins == NULL) return -1;
    int ok = origins == Py_None ? 2 : 0;
    if (PyTuple_CheckExact(origins) && PyTuple_CheckExact(shape) && PyTuple_GET_SIZE(origins) == PyTuple_GET_SIZE(shape))
        ok = none_missing(origins);
    Py_DECREF(origins);
    return ok;
}

/* propagate._own_origins of a value whose shape and origins are tuples: every axis has an origin and no symbolic dim
 * comes twice (told by equality, as the set of them does); 1, 0, or -1 with an error set */
static int distinct_own(PyObject *shape, PyObject *origins) {
    if (!none_missing(origins)) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(shape), found = 0;
    PyObject *symbolic[64];
    if (n > 64) return -2; /* more dims than any rank bcast reads: Python's way decides */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyTuple_GET_ITEM(shape, k), *value = PyObject_GetAttr(e, str_value);
        if (value == NULL) return -1;
        int sym = value == Py_None;
        Py_DECREF(value);
        if (!sym) continue;
        for (Py_ssize_t j = 0; j < found; j++) {
            int same = PyObject_RichCompareBool(symbolic[j], e, Py_EQ);
            if (same != 0) return same < 0 ? -1 : 0;
        }
        symbolic[found++] = e;
    }
    return 1;
}

/* propagate._with_origins where the output has no origins and the shape of the first input that has a shape and
 * origins, whose origins are its own: the output takes them (a new reference); NULL with no error set when that is
 * not so (Python's way finds the origins), NULL with an error set on a failure */
static PyObject *first_origins(PyObject *ins, PyObject *v, PyObject *shape, PyObject *value_type) {
    PyObject *first = NULL, *fshape = NULL, *forigins = NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ins) && first == NULL; k++) {
        PyObject *x = PyList_GET_ITEM(ins, k);
        if (x == Py_None) continue;
        PyObject *xs = PyObject_GetAttr(x, str_shape), *xo = xs == NULL ? NULL : PyObject_GetAttr(x, str_origins);
        if (xo == NULL) {
            Py_XDECREF(xs);
            return NULL;
        }
        if (xs != Py_None && xo != Py_None) {
            first = x, fshape = xs, forigins = xo;
        } else {
            Py_DECREF(xs);
            Py_DECREF(xo);
        }
    }
    if (first == NULL) return NULL;
    PyObject *out = NULL;
    if (!PyTuple_CheckExact(fshape) || !PyTuple_CheckExact(forigins) || !PyTuple_CheckExact(shape)) goto done;
    int same = PyObject_RichCompareBool(fshape, shape, Py_EQ);
    if (same <= 0) goto done;
    int own = distinct_own(fshape, forigins);
    if (own <= 0) {
        if (own == -2) own = 0;
        goto done;
    }
    PyObject *dtype = PyObject_GetAttr(v, str_dtype), *data = dtype ? PyObject_GetAttr(v, str_data) : NULL;
    PyObject *data_origins = data ? PyObject_GetAttr(v, str_data_origins) : NULL;
    if (data_origins != NULL) {
        PyObject *args[5] = {dtype, shape, data, forigins, data_origins};
        out = PyObject_Vectorcall(value_type, args, 5, NULL);
    }
    Py_XDECREF(dtype);
    Py_XDECREF(data);
    Py_XDECREF(data_origins);
done:
    Py_DECREF(fshape);
    Py_DECREF(forigins);
    return out;
}

/* the node's inputs as Python's loop gathers them: vals.get(name, unknown) if name else None (a new list) */
static PyObject *gather(PyObject *inputs, PyObject *vals, PyObject *unknown) {
    Py_ssize_t n = PyList_GET_SIZE(inputs);
    PyObject *ins = PyList_New(n);
    if (ins == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *name = PyList_GET_ITEM(inputs, k), *v;
        int truth = PyObject_IsTrue(name);
        if (truth < 0) goto fail;
        if (!truth) {
            v = Py_None;
        } else {
            v = PyDict_GetItemWithError(vals, name);
            if (v == NULL) {
                if (PyErr_Occurred()) goto fail;
                v = unknown;
            }
        }
        Py_INCREF(v);
        PyList_SET_ITEM(ins, k, v);
    }
    return ins;
fail:
    Py_DECREF(ins);
    return NULL;
}

/* whether the first lo names are all given (Python's all(inputs[:lo])): 1, 0, or -1 */
static int required_given(PyObject *inputs, Py_ssize_t lo) {
    for (Py_ssize_t k = 0; k < lo && k < PyList_GET_SIZE(inputs); k++) {
        int truth = PyObject_IsTrue(PyList_GET_ITEM(inputs, k));
        if (truth <= 0) return truth;
    }
    return 1;
}

typedef struct {
    PyObject *vals, *ctx, *declared, *unknown, *with_origins, *against_declared, *value_type;
} walk;

/* the outputs of a plain node stored as Python's loop stores them where nothing was found: 0, or -1 with an error */
static int store(walk *w, PyObject *node, PyObject *ins, PyObject *outs) {
    PyObject *outputs = PyObject_GetAttr(node, str_outputs);
    if (outputs == NULL) return -1;
    int rc = -1;
    PyObject *seq = PySequence_Fast(outputs, "a node's outputs must be a sequence");
    if (seq == NULL) goto done;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *name = PySequence_Fast_GET_ITEM(seq, k);
        int truth = PyObject_IsTrue(name);
        if (truth < 0) goto done_seq;
        if (!truth) continue;
        PyObject *v = k < PyList_GET_SIZE(outs) ? PyList_GET_ITEM(outs, k) : w->unknown;
        Py_INCREF(v);
        PyObject *shape = PyObject_GetAttr(v, str_shape);
        if (shape == NULL) goto fail_v;
        if (shape != Py_None) {
            int own = own_origins(v, shape);
            if (own < 0) {
                Py_DECREF(shape);
                goto fail_v;
            }
            if (own == 2) { /* no origins: the first input's, where they are its own and its shape is the output's */
                PyObject *got = first_origins(ins, v, shape, w->value_type);
                if (got != NULL) {
                    Py_SETREF(v, got);
                    own = 1;
                } else if (PyErr_Occurred()) {
                    Py_DECREF(shape);
                    goto fail_v;
                } else {
                    own = 0;
                }
            }
            if (!own) {
                PyObject *args[3] = {node, ins, v};
                PyObject *got = PyObject_Vectorcall(w->with_origins, args, 3, NULL);
                if (got == NULL) {
                    Py_DECREF(shape);
                    goto fail_v;
                }
                Py_SETREF(v, got);
            }
        }
        Py_DECREF(shape);
        PyObject *stated = PyDict_GetItemWithError(w->declared, name); /* borrowed */
        if (stated == NULL && PyErr_Occurred()) goto fail_v;
        if (stated != NULL) {
            Py_INCREF(stated);
            PyObject *args[5] = {node, name, v, stated, w->ctx};
            PyObject *got = PyObject_Vectorcall(w->against_declared, args, 5, NULL);
            Py_DECREF(stated);
            if (got == NULL) goto fail_v;
            Py_SETREF(v, got);
        }
        int set = PyDict_SetItem(w->vals, name, v);
        Py_DECREF(v);
        if (set < 0) goto done_seq;
        continue;
    fail_v:
        Py_DECREF(v);
        goto done_seq;
    }
    rc = 0;
done_seq:
    Py_DECREF(seq);
done:
    Py_DECREF(outputs);
    return rc;
}

static PyObject *py_plain(PyObject *self, PyObject *args) {
    PyObject *nodes, *per_op, *functions, *findings, *fallback, *progress;
    Py_ssize_t i, total;
    walk w;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nO!OO!OO!OOOOOOnO:plain", &PyList_Type, &nodes, &i, &PyDict_Type, &w.vals, &w.ctx,
                          &PyDict_Type, &per_op, &functions, &PyDict_Type, &w.declared, &findings, &fallback,
                          &w.unknown, &w.with_origins, &w.against_declared, &progress, &total, &w.value_type))
        return NULL;
    if (!PyList_Check(findings)) {
        PyErr_SetString(PyExc_TypeError, "_walk.plain: findings must be a list");
        return NULL;
    }
    if (functions != Py_None && !PyDict_Check(functions)) {
        PyErr_SetString(PyExc_TypeError, "_walk.plain: functions must be a dict or None");
        return NULL;
    }
    for (; i < PyList_GET_SIZE(nodes); i++) {
        PyObject *node = PyList_GET_ITEM(nodes, i);
        Py_INCREF(node);
        PyObject *inputs = NULL, *key = NULL, *ins = NULL, *outs = NULL, *result = NULL;
        int leave = 0; /* 1: return result (NULL with an error set when making it failed) */
        PyObject *domain = PyObject_GetAttr(node, str_domain), *op = domain ? PyObject_GetAttr(node, str_op) : NULL;
        if (op == NULL) goto fail;
        if ((key = PyTuple_Pack(2, domain, op)) == NULL) goto fail;
        PyObject *entry = PyDict_GetItemWithError(per_op, key); /* borrowed: (fn, rule, lo, hi) */
        if (entry == NULL && PyErr_Occurred()) goto fail;
        int local = 0;
        if (entry != NULL && functions != Py_None && PyDict_GET_SIZE(functions) > 0) {
            local = PyDict_Contains(functions, key);
            if (local < 0) goto fail;
        }
        if ((inputs = PyObject_GetAttr(node, str_inputs)) == NULL) goto fail;
        int plain = entry != NULL && !local && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 4 &&
                    PyTuple_GET_ITEM(entry, 0) != Py_None && PyList_CheckExact(inputs);
        if (plain) {
            Py_ssize_t lo = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 2));
            Py_ssize_t hi = lo == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 3));
            if (hi == -1 && PyErr_Occurred()) goto fail;
            Py_ssize_t n = PyList_GET_SIZE(inputs);
            int given = lo <= n && n <= hi ? required_given(inputs, lo) : 0;
            if (given < 0) goto fail;
            plain = given;
        }
        if (!plain) { /* Python's loop takes the node from the start */
            leave = 1, result = Py_BuildValue("(nO)", i, Py_None);
            goto out;
        }
        if (progress != Py_None && i % 64 == 0) { /* where Python's loop calls it: before the node's inputs */
            PyObject *r = PyObject_CallFunction(progress, "nn", i, total);
            if (r == NULL) goto fail;
            Py_DECREF(r);
        }
        PyObject *fn = PyTuple_GET_ITEM(entry, 0);
        Py_INCREF(fn);
        if ((ins = gather(inputs, w.vals, w.unknown)) == NULL || PyObject_SetAttr(w.ctx, str_node, node) < 0 ||
            PyObject_SetAttr(w.ctx, str_values, w.vals) < 0 || PyObject_SetAttr(w.ctx, str_fallback, fallback) < 0) {
            Py_DECREF(fn);
            goto fail;
        }
        Py_ssize_t before = PyList_GET_SIZE(findings);
        PyObject *call[3] = {node, ins, w.ctx};
        outs = PyObject_Vectorcall(fn, call, 3, NULL);
        Py_DECREF(fn);
        if (outs == NULL) {
            if (PyErr_ExceptionMatches(PyExc_RecursionError) || !PyErr_ExceptionMatches(PyExc_Exception)) goto fail;
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (tb != NULL && value != NULL) PyException_SetTraceback(value, tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            if (value == NULL) goto fail;
            leave = 1, result = Py_BuildValue("(n(OOOn))", i, ins, value, Py_True, before);
            Py_DECREF(value);
            goto out;
        }
        if (!PyList_CheckExact(outs) || PyList_GET_SIZE(findings) != before) { /* the rest is Python's */
            leave = 1, result = Py_BuildValue("(n(OOOn))", i, ins, outs, Py_False, before);
            goto out;
        }
        if (store(&w, node, ins, outs) < 0) goto fail;
        goto out; /* stored: on to the next node */
    fail:
        leave = 1, result = NULL;
    out:
        Py_DECREF(node);
        Py_XDECREF(domain);
        Py_XDECREF(op);
        Py_XDECREF(key);
        Py_XDECREF(inputs);
        Py_XDECREF(ins);
        Py_XDECREF(outs);
        if (leave) return result;
    }
    return Py_BuildValue("(nO)", i, Py_None);
}

static PyMethodDef methods[] = {
    {"plain", py_plain, METH_VARARGS,
     "plain(nodes, start, vals, ctx, per_op, functions, declared, findings, fallback, unknown, with_origins, "
     "against_declared, progress, total, value_type): bcast.graph.propagate's short way over the nodes from start on, as "
     "(where it stopped, what it left there)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walk", "The short way of bcast.graph.propagate's loop, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__walk(void) {
    static const char *const names[13] = {"inputs", "outputs", "domain", "op", "shape", "origins", "node", "values",
                                          "fallback", "value", "dtype", "data", "data_origins"};
    PyObject **strs[13] = {&str_inputs, &str_outputs, &str_domain, &str_op, &str_shape, &str_origins, &str_node,
                           &str_values, &str_fallback, &str_value, &str_dtype, &str_data, &str_data_origins};
    for (int k = 0; k < 13; k++)
        if ((*strs[k] = PyUnicode_InternFromString(names[k])) == NULL) return NULL;
    return PyModule_Create(&module);
}
