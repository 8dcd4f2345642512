/* bcast.check._rows: the rows of a report (one NodeReport per broadcasting node), compiled.
 *
 * A report lists every broadcasting node of a model: tens of thousands on a large graph, each made of its
 * operands' names and shapes, and all but a few hundred shapes shared. bcast.check.graph_report._node_reports makes
 * them in Python, and stays the reference (tests/test_graph_walk.py shows that both give the same reports on every
 * model of the repository); rows() makes the same NodeReports here. The tuples a row holds that hold only text (its
 * operands' texts and names) and the row's tuple of shapes are made untracked by the cyclic collector, as CPython
 * makes such a tuple untracked at the collector's first look: the collection that follows a check then walks only
 * the rows themselves.
 *
 * rows(records, layout, by_id, show) -> list of NodeReport
 *
 * records are BroadcastRecords (node, rule, inputs as (name, shape) pairs, output, mode, axes), merged one per
 * node; layout is (NodeReport, its fields' member descriptors in order); by_id maps id(shape) to (text, json), and
 * show(shape) gives (text, json) of a shape it lacks (adding it).
 */
#include "slots.h"

enum { R_NAME, R_OP, R_INPUTS, R_OUTPUT, R_RULE, R_NAMES, R_SHAPES, R_OUT_SHAPE, R_MODE, R_AXES, R_FIELDS };

static PyObject *str_node, *str_label, *str_op, *str_rule, *str_inputs, *str_output, *str_mode, *str_axes;

/* (text, json) of a shape: by_id's entry for it, else show(shape); a new reference to a 2-tuple, or NULL */
static PyObject *shown(PyObject *shape, PyObject *by_id, PyObject *show) {
    PyObject *key = PyLong_FromVoidPtr(shape);
    if (key == NULL) return NULL;
    PyObject *got = PyDict_GetItemWithError(by_id, key); /* borrowed */
    Py_DECREF(key);
    if (got != NULL) {
        Py_INCREF(got);
    } else {
        if (PyErr_Occurred()) return NULL;
        got = PyObject_CallOneArg(show, shape);
        if (got == NULL) return NULL;
    }
    if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 2) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "_rows.rows: a shape's entry must be (text, json)");
        return NULL;
    }
    return got;
}

/* one row: a new NodeReport, or NULL with an error set */
static PyObject *row(PyObject *rec, PyTypeObject *type, const Py_ssize_t *offsets, PyObject *by_id, PyObject *show) {
    PyObject *v[R_FIELDS] = {NULL}, *node = NULL, *inputs = NULL, *output = NULL, *seq = NULL, *out = NULL;
    if ((node = PyObject_GetAttr(rec, str_node)) == NULL) goto fail;
    if ((v[R_NAME] = PyObject_GetAttr(node, str_label)) == NULL || (v[R_OP] = PyObject_GetAttr(node, str_op)) == NULL ||
        (v[R_RULE] = PyObject_GetAttr(rec, str_rule)) == NULL || (v[R_MODE] = PyObject_GetAttr(rec, str_mode)) == NULL ||
        (v[R_AXES] = PyObject_GetAttr(rec, str_axes)) == NULL || (inputs = PyObject_GetAttr(rec, str_inputs)) == NULL ||
        (output = PyObject_GetAttr(rec, str_output)) == NULL)
        goto fail;
    if ((seq = PySequence_Fast(inputs, "_rows.rows: a record's inputs must be a sequence")) == NULL) goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((v[R_INPUTS] = PyTuple_New(n)) == NULL || (v[R_NAMES] = PyTuple_New(n)) == NULL ||
        (v[R_SHAPES] = PyTuple_New(n)) == NULL)
        goto fail;
    int any_unknown = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "_rows.rows: a record's input must be (name, shape)");
            goto fail;
        }
        PyObject *name = PyTuple_GET_ITEM(pair, 0), *shape = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "_rows.rows: an input's name must be text");
            goto fail;
        }
        if (shape == Py_None) any_unknown = 1;
        PyObject *got = shown(shape, by_id, show);
        if (got == NULL) goto fail;
        PyObject *text = PyTuple_GET_ITEM(got, 0), *json = PyTuple_GET_ITEM(got, 1);
        PyObject *line = PyUnicode_Check(text) ? PyUnicode_FromFormat("%U %U", name, text) : NULL;
        if (line == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_rows.rows: a shape's text must be text");
            Py_DECREF(got);
            goto fail;
        }
        PyTuple_SET_ITEM(v[R_INPUTS], k, line);
        Py_INCREF(name);
        PyTuple_SET_ITEM(v[R_NAMES], k, name);
        Py_INCREF(json);
        PyTuple_SET_ITEM(v[R_SHAPES], k, json);
        Py_DECREF(got);
    }
    /* texts and names are text alone, the shapes' tuples ints and text: no cycle can pass through them */
    PyObject_GC_UnTrack(v[R_INPUTS]);
    PyObject_GC_UnTrack(v[R_NAMES]);
    PyObject_GC_UnTrack(v[R_SHAPES]);
    if ((out = shown(output, by_id, show)) == NULL) goto fail;
    v[R_OUTPUT] = output != Py_None || any_unknown ? PyTuple_GET_ITEM(out, 0) : Py_None;
    v[R_OUT_SHAPE] = PyTuple_GET_ITEM(out, 1);
    Py_INCREF(v[R_OUTPUT]);
    Py_INCREF(v[R_OUT_SHAPE]);
    PyObject *report = type->tp_alloc(type, 0);
    if (report == NULL) goto fail;
    for (int k = 0; k < R_FIELDS; k++) *(PyObject **)((char *)report + offsets[k]) = v[k]; /* the references move */
    Py_DECREF(node);
    Py_DECREF(inputs);
    Py_DECREF(output);
    Py_DECREF(seq);
    Py_DECREF(out);
    return report;
fail:
    for (int k = 0; k < R_FIELDS; k++) Py_XDECREF(v[k]);
    Py_XDECREF(node);
    Py_XDECREF(inputs);
    Py_XDECREF(output);
    Py_XDECREF(seq);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *py_rows(PyObject *self, PyObject *args) {
    PyObject *records, *layout, *by_id, *show;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!O!O:rows", &PyList_Type, &records, &PyTuple_Type, &layout, &PyDict_Type, &by_id,
                          &show))
        return NULL;
    if (PyTuple_GET_SIZE(layout) != 2 || !PyType_Check(PyTuple_GET_ITEM(layout, 0))) {
        PyErr_SetString(PyExc_TypeError, "_rows.rows: layout must be (NodeReport, its 10 members)");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(layout, 0);
    Py_ssize_t offsets[R_FIELDS];
    if (slot_offsets(type, PyTuple_GET_ITEM(layout, 1), R_FIELDS, offsets, "_rows.rows") < 0) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        PyObject *rec = PyList_GET_ITEM(records, i);
        Py_INCREF(rec);
        PyObject *r = row(rec, type, offsets, by_id, show);
        Py_DECREF(rec);
        int rc = r == NULL ? -1 : PyList_Append(out, r);
        Py_XDECREF(r);
        if (rc < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"rows", py_rows, METH_VARARGS,
     "rows(records, layout, by_id, show): bcast.check.graph_report._node_reports's NodeReports, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rows", "The rows of a report (one NodeReport per broadcasting node), compiled.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rows(void) {
    static const char *const names[8] = {"node", "label", "op", "rule", "inputs", "output", "mode", "axes"};
    PyObject **strs[8] = {&str_node, &str_label, &str_op, &str_rule, &str_inputs, &str_output, &str_mode, &str_axes};
    for (int k = 0; k < 8; k++)
        if ((*strs[k] = PyUnicode_InternFromString(names[k])) == NULL) return NULL;
    return PyModule_Create(&module);
}
