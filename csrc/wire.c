/* bcast.onnx._wire: the field loop of bcast.onnx.proto's decoder, and the ONNX reader's scans of a graph's
 * structure (bcast.files.graph_structure's twin, py_structure) and of its nodes' fields (bcast.onnx.reader's
 * _scan_nodes, py_node_scan), in C (plain Python C API).
 *
 * Decoding a model is a loop over every byte of its encoding, and a Python loop pays an interpreted
 * step for each; here the loop is compiled. proto._merge stays the reference: this module reads the
 * same schema (each class's _KEYS), makes the same objects in the same order (the order of each
 * __dict__ included) and raises the same proto._FaultError, with the same text and byte offsets, in
 * the same cases. The rare paths are proto.py's own functions, passed in by the caller: an unknown
 * field (skipped, a group included, or a stripped tensor's mark kept) and a packed repeated number.
 *
 * merge(obj, data, pos, end, depth, context) decodes data[pos:end] into obj, where data is bytes and
 * context is (_FaultError, NodeProto, _unknown, _packed, MAX_DEPTH, kinds), kinds being proto's
 * (_INT32, _INT64, _UINT64, _ENUM, _STRING, _BYTES, _FLOAT, _DOUBLE, _MESSAGE), which must be 0..8.
 *
 * Every read is checked against the end of the message holding it, and that end against the bytes;
 * the work is linear in the bytes, and the recursion (one C frame per nested message) stops at
 * MAX_DEPTH as proto._merge does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "slots.h"

#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Unpack4(p, le) _PyFloat_Unpack4((const unsigned char *)(p), (le))
#define PyFloat_Unpack8(p, le) _PyFloat_Unpack8((const unsigned char *)(p), (le))
#endif

enum { K_INT32, K_INT64, K_UINT64, K_ENUM, K_STRING, K_BYTES, K_FLOAT, K_DOUBLE, K_MESSAGE, K_COUNT };

/* a key of _KEYS higher than this is refused when the schema is read: the table by key stays small */
#define MAX_KEY 65535

typedef struct schema schema;

/* one entry of a class's _KEYS: (name, kind, sub, repeated, oneof) */
typedef struct {
    PyObject *name;      /* the attribute, the spec's own str */
    PyObject *sub;       /* the message class, or the enum's values */
    PyObject *oneof_key; /* "_oneof_" + the oneof's name, or NULL */
    schema *sub_schema;  /* the schema of the last message made for this field: the next is of the same class */
    int kind, repeated;
} field;

/* a message class as the decoder sees it: its fields by the key that starts them */
struct schema {
    PyTypeObject *type;
    PyObject *type_name; /* type.__name__, for the messages */
    Py_ssize_t nslots;
    field **slots;       /* by key, NULL for a key the class does not know */
    field *fields;
    Py_ssize_t nfields;
};

/* the schemas read so far, each holding its class: a class's _KEYS is read once */
static schema **cache;
static Py_ssize_t ncache, cache_cap;

typedef struct {
    PyObject *data; /* the bytes decoded: what each NodeProto's _span holds */
    const unsigned char *buf;
    PyObject *fault, *node, *unknown, *packed;
    long max_depth;
} ctx;

static PyObject *str_span, *str_extend, *str_append;

/* the fields read since import: the work the loop has done, which tests count (a compiled loop takes no Python
 * steps to count) to show that it is linear in the bytes and stops at once on a fault */
static unsigned long long fields_read;

/* -- faults: proto._FaultError(text, *offsets) ------------------------------------------------- */

/* raise _FaultError(text, *offs); steals text and offs (any of them NULL: an error is already set) */
static void raise_fault(ctx *c, PyObject *text, int n, PyObject **offs) {
    PyObject *args = NULL, *exc;
    int i;
    if (text == NULL) goto done;
    for (i = 0; i < n; i++)
        if (offs[i] == NULL) goto done;
    args = PyTuple_New(1 + n);
    if (args == NULL) goto done;
    PyTuple_SET_ITEM(args, 0, text);
    text = NULL;
    for (i = 0; i < n; i++) {
        PyTuple_SET_ITEM(args, 1 + i, offs[i]);
        offs[i] = NULL;
    }
    exc = PyObject_Call(c->fault, args, NULL);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
done:
    Py_XDECREF(text);
    for (i = 0; i < n; i++) Py_XDECREF(offs[i]);
    Py_XDECREF(args);
}

static int fault1(ctx *c, const char *text, Py_ssize_t a) {
    PyObject *offs[1] = {PyLong_FromSsize_t(a)};
    raise_fault(c, PyUnicode_FromString(text), 1, offs);
    return -1;
}

static int fault2(ctx *c, const char *text, Py_ssize_t a, Py_ssize_t b) {
    PyObject *offs[2] = {PyLong_FromSsize_t(a), PyLong_FromSsize_t(b)};
    raise_fault(c, PyUnicode_FromString(text), 2, offs);
    return -1;
}

/* a field whose value runs from `at` to `to` (a Python int: a length may take it past 2**64), past `end` */
static int fault_past(ctx *c, schema *s, uint64_t key, Py_ssize_t at, PyObject *to, Py_ssize_t end) {
    PyObject *offs[3] = {PyLong_FromSsize_t(at), to, PyLong_FromSsize_t(end)};
    PyObject *text = PyUnicode_FromFormat(
        "field %llu of a %U at byte {} runs to byte {}, past the end of the message holding it at byte {}",
        (unsigned long long)(key >> 3), s->type_name);
    raise_fault(c, text, 3, offs);
    return -1;
}

static int fault_depth(ctx *c, Py_ssize_t pos) {
    PyObject *offs[1] = {PyLong_FromSsize_t(pos)};
    raise_fault(c, PyUnicode_FromFormat("messages nested more than %ld deep at byte {}", c->max_depth), 1, offs);
    return -1;
}

/* -- reading ------------------------------------------------------------------------------------ */

/* proto._varint: the varint at pos (masked to 64 bits), *next the position after it */
static int varint(ctx *c, Py_ssize_t pos, Py_ssize_t end, uint64_t *out, Py_ssize_t *next) {
    uint64_t value = 0;
    int shift = 0;
    Py_ssize_t i = pos;
    for (;;) {
        if (i >= end)
            return fault2(c, "a number at byte {} runs past the end of the message holding it at byte {}", pos, end);
        if (i - pos == 10) return fault1(c, "a malformed number at byte {}", pos);
        unsigned b = c->buf[i++];
        value |= (uint64_t)(b & 0x7F) << shift; /* shift is at most 63: the tenth byte is the last read */
        if (b < 0x80) {
            *out = value;
            *next = i;
            return 0;
        }
        shift += 7;
    }
}

/* proto._scalar: a varint as the field's type reads it */
static PyObject *scalar(int kind, uint64_t v) {
    if (kind == K_INT64) return PyLong_FromLongLong((long long)(int64_t)v);
    if (kind == K_INT32) return PyLong_FromLong((long)(int32_t)(uint32_t)(v & 0xFFFFFFFFu));
    return PyLong_FromUnsignedLongLong(v);
}

/* -- the schema --------------------------------------------------------------------------------- */

static void schema_free(schema *s) {
    if (s == NULL) return;
    for (Py_ssize_t i = 0; i < s->nfields; i++) {
        Py_XDECREF(s->fields[i].name);
        Py_XDECREF(s->fields[i].sub);
        Py_XDECREF(s->fields[i].oneof_key);
    }
    PyMem_Free(s->fields);
    PyMem_Free(s->slots);
    Py_XDECREF(s->type_name);
    Py_XDECREF((PyObject *)s->type);
    PyMem_Free(s);
}

static int read_field(field *f, PyObject *spec) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5) {
        PyErr_SetString(PyExc_TypeError, "_wire: a field spec is not a 5-tuple");
        return -1;
    }
    PyObject *name = PyTuple_GET_ITEM(spec, 0), *kind = PyTuple_GET_ITEM(spec, 1);
    PyObject *sub = PyTuple_GET_ITEM(spec, 2), *oneof = PyTuple_GET_ITEM(spec, 4);
    if (!PyUnicode_Check(name) || !PyLong_Check(kind) || (oneof != Py_None && !PyUnicode_Check(oneof))) {
        PyErr_SetString(PyExc_TypeError, "_wire: a field spec of the wrong types");
        return -1;
    }
    long k = PyLong_AsLong(kind);
    if (k == -1 && PyErr_Occurred()) return -1;
    if (k < 0 || k >= K_COUNT) {
        PyErr_SetString(PyExc_ValueError, "_wire: a field of an unknown kind");
        return -1;
    }
    int repeated = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 3));
    if (repeated < 0) return -1;
    f->kind = (int)k;
    f->repeated = repeated;
    Py_INCREF(name);
    f->name = name;
    Py_INCREF(sub);
    f->sub = sub;
    if (oneof != Py_None) {
        f->oneof_key = PyUnicode_FromFormat("_oneof_%U", oneof);
        if (f->oneof_key == NULL) return -1;
    }
    return 0;
}

static schema *schema_read(PyTypeObject *type) {
    schema *s = PyMem_Calloc(1, sizeof(schema));
    PyObject *keys = NULL, *k, *v;
    Py_ssize_t i = 0, top = -1;
    if (s == NULL) return (schema *)PyErr_NoMemory();
    Py_INCREF(type);
    s->type = type;
    s->type_name = PyObject_GetAttrString((PyObject *)type, "__name__");
    if (s->type_name == NULL) goto fail;
    if (!PyUnicode_Check(s->type_name)) {
        PyErr_SetString(PyExc_TypeError, "_wire: a class whose __name__ is not a str");
        goto fail;
    }
    keys = PyObject_GetAttrString((PyObject *)type, "_KEYS");
    if (keys == NULL) goto fail;
    if (!PyDict_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "_wire: a message class whose _KEYS is not a dict");
        goto fail;
    }
    while (PyDict_Next(keys, &i, &k, &v)) {
        Py_ssize_t key = PyLong_Check(k) ? PyLong_AsSsize_t(k) : -1;
        if (key == -1 && PyErr_Occurred()) goto fail;
        if (key < 0 || key > MAX_KEY) {
            PyErr_SetString(PyExc_ValueError, "_wire: a key of _KEYS out of range");
            goto fail;
        }
        if (key > top) top = key;
    }
    s->nslots = top + 1;
    s->nfields = PyDict_GET_SIZE(keys);
    s->slots = PyMem_Calloc(s->nslots ? (size_t)s->nslots : 1, sizeof(field *));
    s->fields = PyMem_Calloc(s->nfields ? (size_t)s->nfields : 1, sizeof(field));
    if (s->slots == NULL || s->fields == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t n = 0;
    i = 0;
    while (PyDict_Next(keys, &i, &k, &v) && n < s->nfields) {
        Py_ssize_t key = PyLong_AsSsize_t(k);
        if (key < 0 || key >= s->nslots) {
            PyErr_SetString(PyExc_RuntimeError, "_wire: _KEYS changed while it was read");
            goto fail;
        }
        if (read_field(&s->fields[n], v) < 0) goto fail;
        s->slots[key] = &s->fields[n];
        n++;
    }
    Py_DECREF(keys);
    return s;
fail:
    Py_XDECREF(keys);
    schema_free(s);
    return NULL;
}

static schema *schema_of(PyTypeObject *type) {
    for (Py_ssize_t i = 0; i < ncache; i++)
        if (cache[i]->type == type) return cache[i];
    /* read before the cache grows: reading runs Python code, which may let another thread add a schema */
    schema *s = schema_read(type);
    if (s == NULL) return NULL;
    if (ncache == cache_cap) {
        Py_ssize_t cap = cache_cap ? 2 * cache_cap : 32;
        schema **grown = PyMem_Realloc(cache, (size_t)cap * sizeof(schema *));
        if (grown == NULL) {
            schema_free(s);
            return (schema *)PyErr_NoMemory();
        }
        cache = grown;
        cache_cap = cap;
    }
    cache[ncache++] = s;
    return s;
}

/* -- decoding ----------------------------------------------------------------------------------- */

static int merge(ctx *c, PyObject *obj, PyObject *d, schema *s, Py_ssize_t pos, Py_ssize_t end, long depth);

/* decode data[body:end] into the message obj (made for field f), at nesting depth */
static int merge_into(ctx *c, PyObject *obj, field *f, Py_ssize_t body, Py_ssize_t end, long depth) {
    schema *s = f->sub_schema;
    if (s == NULL || s->type != Py_TYPE(obj)) {
        s = schema_of(Py_TYPE(obj));
        if (s == NULL) return -1;
        f->sub_schema = s;
    }
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d == NULL) return -1;
    int rc = merge(c, obj, d, s, body, end, depth);
    Py_DECREF(d);
    return rc;
}

/* proto._set_oneof: name the field f the member of its oneof set, clearing another one */
static int set_oneof(PyObject *d, field *f) {
    PyObject *other = PyDict_GetItemWithError(d, f->oneof_key);
    if (other == NULL && PyErr_Occurred()) return -1;
    if (other != NULL && other != Py_None) {
        Py_INCREF(other);
        int ne = PyObject_RichCompareBool(other, f->name, Py_NE);
        if (ne > 0) ne = PyDict_DelItem(d, other);
        Py_DECREF(other);
        if (ne < 0) return -1;
    }
    return PyDict_SetItem(d, f->oneof_key, f->name);
}

/* d.setdefault(name, []): a new reference */
static PyObject *list_of(PyObject *d, PyObject *name) {
    PyObject *l = PyDict_GetItemWithError(d, name);
    if (l != NULL) {
        Py_INCREF(l);
        return l;
    }
    if (PyErr_Occurred()) return NULL;
    l = PyList_New(0);
    if (l != NULL && PyDict_SetItem(d, name, l) < 0) Py_CLEAR(l);
    return l;
}

/* d.setdefault(name, []).append(value); value is stolen */
static int append(PyObject *d, PyObject *name, PyObject *value) {
    PyObject *l = list_of(d, name);
    int rc = -1;
    if (l != NULL) {
        if (PyList_CheckExact(l)) {
            rc = PyList_Append(l, value);
        } else {
            PyObject *r = PyObject_CallMethodObjArgs(l, str_append, value, NULL);
            rc = r == NULL ? -1 : 0;
            Py_XDECREF(r);
        }
        Py_DECREF(l);
    }
    Py_DECREF(value);
    return rc;
}

/* proto._submessage: merge data[body:end] into the message the singular field f holds, made if unset */
static int submessage(ctx *c, PyObject *d, field *f, Py_ssize_t body, Py_ssize_t end, long depth) {
    PyObject *current = PyDict_GetItemWithError(d, f->name);
    if (current == NULL && PyErr_Occurred()) return -1;
    if (current == NULL || current == Py_None) {
        current = PyObject_CallNoArgs(f->sub);
        if (current == NULL) return -1;
        if ((f->oneof_key != NULL && set_oneof(d, f) < 0) || PyDict_SetItem(d, f->name, current) < 0) {
            Py_DECREF(current);
            return -1;
        }
    } else {
        Py_INCREF(current);
    }
    int rc = merge_into(c, current, f, body, end, depth);
    Py_DECREF(current);
    return rc;
}

/* a new element of a repeated message field; a NodeProto keeps its span of the bytes */
static PyObject *element(ctx *c, field *f, Py_ssize_t body, Py_ssize_t end, long depth) {
    PyObject *value = PyObject_CallNoArgs(f->sub);
    if (value == NULL) return NULL;
    if (merge_into(c, value, f, body, end, depth) < 0) goto fail;
    if (f->sub == c->node) {
        PyObject *d = PyObject_GenericGetDict(value, NULL);
        if (d == NULL) goto fail;
        PyObject *span = Py_BuildValue("(Onn)", c->data, body, end);
        int rc = span == NULL ? -1 : PyDict_SetItem(d, str_span, span);
        Py_XDECREF(span);
        Py_DECREF(d);
        if (rc < 0) goto fail;
    }
    return value;
fail:
    Py_DECREF(value);
    return NULL;
}

/* a packed repeated number: d.setdefault(name, []).extend(_packed(data, body, end, kind)) */
static int packed(ctx *c, PyObject *d, field *f, Py_ssize_t body, Py_ssize_t end) {
    PyObject *l = list_of(d, f->name), *values = NULL, *r = NULL;
    if (l != NULL) values = PyObject_CallFunction(c->packed, "Onni", c->data, body, end, f->kind);
    if (values != NULL) r = PyObject_CallMethodObjArgs(l, str_extend, values, NULL);
    Py_XDECREF(l);
    Py_XDECREF(values);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* a string field's value: text when UTF-8, else its bytes (as protobuf hands a proto2 string over) */
static PyObject *text_or_bytes(ctx *c, field *f, Py_ssize_t body, Py_ssize_t end) {
    const char *p = (const char *)c->buf + body;
    if (f->kind == K_STRING) {
        PyObject *s = PyUnicode_DecodeUTF8(p, end - body, NULL);
        if (s != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return s;
        PyErr_Clear();
    }
    return PyBytes_FromStringAndSize(p, end - body);
}

/* proto._merge: decode the fields of data[pos:end] into obj (its __dict__ d, its schema s) */
static int merge(ctx *c, PyObject *obj, PyObject *d, schema *s, Py_ssize_t pos, Py_ssize_t end, long depth) {
    const unsigned char *buf = c->buf;
    if (depth > c->max_depth) return fault_depth(c, pos);
    while (pos < end) {
        fields_read++;
        Py_ssize_t at = pos;
        uint64_t key = buf[pos];
        if (key < 0x80)
            pos++;
        else if (varint(c, pos, end, &key, &pos) < 0)
            return -1;
        field *f = key < (uint64_t)s->nslots ? s->slots[key] : NULL;
        unsigned wire = (unsigned)(key & 7);
        if (f == NULL) {
            if (key >> 3 == 0 || wire > 5) return fault1(c, "byte {} is not a protobuf field", at);
            PyObject *r = PyObject_CallFunction(c->unknown, "OOnnIKnl", obj, c->data, pos, end, wire,
                                                (unsigned long long)(key >> 3), at, depth);
            if (r == NULL) return -1;
            pos = PyLong_AsSsize_t(r);
            Py_DECREF(r);
            if (pos == -1 && PyErr_Occurred()) return -1;
            if (pos < 0) {
                PyErr_SetString(PyExc_ValueError, "_wire: an unknown field skipped to a negative position");
                return -1;
            }
            continue;
        }
        PyObject *value;
        if (wire == 2) {
            uint64_t n;
            Py_ssize_t body;
            if (pos < end && buf[pos] < 0x80) {
                n = buf[pos];
                body = pos + 1;
            } else if (varint(c, pos, end, &n, &body) < 0) {
                return -1;
            }
            if (n > (uint64_t)(end - body)) {
                PyObject *b = PyLong_FromSsize_t(body), *m = PyLong_FromUnsignedLongLong(n), *to = NULL;
                if (b != NULL && m != NULL) to = PyNumber_Add(b, m);
                Py_XDECREF(b);
                Py_XDECREF(m);
                return fault_past(c, s, key, at, to, end);
            }
            pos = body + (Py_ssize_t)n;
            if (f->kind == K_MESSAGE) {
                if (!f->repeated) {
                    if (submessage(c, d, f, body, pos, depth + 1) < 0) return -1;
                    continue;
                }
                value = element(c, f, body, pos, depth + 1);
            } else if (f->kind != K_STRING && f->kind != K_BYTES) {
                if (packed(c, d, f, body, pos) < 0) return -1;
                continue;
            } else {
                value = text_or_bytes(c, f, body, pos);
            }
        } else if (wire == 0) {
            if (pos < end && buf[pos] < 0x80) {
                value = PyLong_FromLong(buf[pos]);
                pos++;
            } else {
                uint64_t v;
                if (varint(c, pos, end, &v, &pos) < 0) return -1;
                value = scalar(f->kind, v);
            }
            if (value != NULL && f->kind == K_ENUM) {
                int known = PySequence_Contains(f->sub, value);
                if (known <= 0) { /* a closed enum's unknown value: an unknown field, the field stays unset */
                    Py_DECREF(value);
                    if (known < 0) return -1;
                    continue;
                }
            }
        } else {
            Py_ssize_t size = wire == 5 ? 4 : 8;
            if (size > end - pos) return fault_past(c, s, key, at, PyLong_FromSsize_t(pos + size), end);
            const char *p = (const char *)buf + pos;
            double x = wire == 5 ? PyFloat_Unpack4(p, 1) : PyFloat_Unpack8(p, 1);
            if (x == -1.0 && PyErr_Occurred()) return -1;
            value = PyFloat_FromDouble(x);
            pos += size;
        }
        if (value == NULL) return -1;
        if (f->repeated) {
            if (append(d, f->name, value) < 0) return -1;
        } else {
            int rc = (f->oneof_key != NULL && set_oneof(d, f) < 0) ? -1 : PyDict_SetItem(d, f->name, value);
            Py_DECREF(value);
            if (rc < 0) return -1;
        }
    }
    return 0;
}

static int read_context(ctx *c, PyObject *context) {
    if (!PyTuple_Check(context) || PyTuple_GET_SIZE(context) != 6) {
        PyErr_SetString(PyExc_TypeError, "_wire.merge: context must be a 6-tuple");
        return -1;
    }
    c->fault = PyTuple_GET_ITEM(context, 0);
    c->node = PyTuple_GET_ITEM(context, 1);
    c->unknown = PyTuple_GET_ITEM(context, 2);
    c->packed = PyTuple_GET_ITEM(context, 3);
    c->max_depth = PyLong_AsLong(PyTuple_GET_ITEM(context, 4));
    if (c->max_depth == -1 && PyErr_Occurred()) return -1;
    PyObject *kinds = PyTuple_GET_ITEM(context, 5);
    if (!PyTuple_Check(kinds) || PyTuple_GET_SIZE(kinds) != K_COUNT) goto bad_kinds;
    for (Py_ssize_t i = 0; i < K_COUNT; i++) {
        PyObject *k = PyTuple_GET_ITEM(kinds, i);
        if (!PyLong_Check(k) || PyLong_AsLong(k) != i) goto bad_kinds;
    }
    return 0;
bad_kinds:
    PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "_wire.merge: the kinds of field must be 0..8, in proto.py's order");
    return -1;
}

static PyObject *py_merge(PyObject *self, PyObject *args) {
    PyObject *obj, *data, *context;
    Py_ssize_t pos, end;
    long depth;
    ctx c;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOnnlO:merge", &obj, &data, &pos, &end, &depth, &context)) return NULL;
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "_wire.merge: data must be bytes");
        return NULL;
    }
    if (pos < 0 || end > PyBytes_GET_SIZE(data)) {
        PyErr_SetString(PyExc_ValueError, "_wire.merge: pos and end must lie within data");
        return NULL;
    }
    if (read_context(&c, context) < 0) return NULL;
    c.data = data;
    c.buf = (const unsigned char *)PyBytes_AS_STRING(data);
    schema *s = schema_of(Py_TYPE(obj));
    if (s == NULL) return NULL;
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d == NULL) return NULL;
    int rc = merge(&c, obj, d, s, pos, end, depth);
    Py_DECREF(d);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_fields_read(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(fields_read);
}

/* -- a graph's structure: bcast.files.graph_structure's scan (without a scope around), compiled --------
 *
 * structure(inputs, outputs, sources, graph_outputs) -> (producer, preds, faults): the same scan over the same
 * names as graph_structure with visible=None, in the same order; faults maps each kind to (kind, at, node, slot,
 * name, source), the fields of the first GraphFault of that kind. inputs and outputs are iterables of sequences
 * of names (each node's), each iterated once, outputs first; a name is a tensor when it is true. */

static PyObject *fault_kinds[5]; /* "twice", "unproduced", "own", "late", "output", interned */
enum { F_TWICE, F_UNPRODUCED, F_OWN, F_LATE, F_OUTPUT };

/* the first fault of its kind is kept: 0, or -1 with an error set */
static int add_fault(PyObject *faults, int kind, Py_ssize_t at, Py_ssize_t node, Py_ssize_t slot, PyObject *name,
                     PyObject *source) {
    PyObject *key = fault_kinds[kind];
    int has = PyDict_Contains(faults, key);
    if (has != 0) return has < 0 ? -1 : 0;
    PyObject *t = Py_BuildValue("(OnnnOO)", key, at, node, slot, name, source);
    if (t == NULL) return -1;
    int rc = PyDict_SetItem(faults, key, t);
    Py_DECREF(t);
    return rc;
}

/* one produced name (output slot of node i): producer[name] = i, or a "twice" fault; 0, or -1 with an error set */
static int output_name(PyObject *name, Py_ssize_t i, Py_ssize_t slot, PyObject *producer, PyObject *faults,
                       Py_ssize_t at) {
    int truth = PyObject_IsTrue(name);
    if (truth <= 0) return truth;
    PyObject *p = PyDict_GetItemWithError(producer, name); /* borrowed */
    if (p != NULL) {
        Py_INCREF(p);
        int rc = add_fault(faults, F_TWICE, at, i, slot, name, p);
        Py_DECREF(p);
        return rc;
    }
    if (PyErr_Occurred()) return -1;
    PyObject *index = PyLong_FromSsize_t(i);
    if (index == NULL) return -1;
    int rc = PyDict_SetItem(producer, name, index);
    Py_DECREF(index);
    return rc;
}

/* the produced names of every node: producer[name] = node, or a "twice" fault */
static int scan_outputs(PyObject *outputs, PyObject *producer, PyObject *faults, Py_ssize_t *at) {
    PyObject *it = PyObject_GetIter(outputs), *outs;
    if (it == NULL) return -1;
    Py_ssize_t i = 0;
    while ((outs = PyIter_Next(it)) != NULL) {
        PyObject *seq = PySequence_Fast(outs, "_wire.structure: a node's outputs must be a sequence");
        Py_DECREF(outs);
        if (seq == NULL) goto fail;
        /* the size looked at again, and each name held, at every step: a name's __bool__ or __hash__ may change
         * the list (never a decoded model's, whose names are str) */
        for (Py_ssize_t slot = 0; slot < PySequence_Fast_GET_SIZE(seq); slot++) {
            PyObject *name = PySequence_Fast_GET_ITEM(seq, slot);
            Py_INCREF(name);
            ++*at;
            int rc = output_name(name, i, slot, producer, faults, *at);
            Py_DECREF(name);
            if (rc < 0) goto fail_seq;
        }
        Py_DECREF(seq);
        i++;
        continue;
    fail_seq:
        Py_DECREF(seq);
        goto fail;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
fail:
    Py_DECREF(it);
    return -1;
}

/* one read name (input slot of node i): its producer appended to mine when a node, or a fault; 0, or -1 */
static int input_name(PyObject *name, Py_ssize_t i, Py_ssize_t slot, PyObject *producer, PyObject *faults,
                      Py_ssize_t at, PyObject *minus_one, PyObject *mine) {
    int truth = PyObject_IsTrue(name);
    if (truth <= 0) return truth; /* an input left out: no tensor */
    PyObject *src = PyDict_GetItemWithError(producer, name); /* borrowed */
    if (src == NULL) return PyErr_Occurred() ? -1 : add_fault(faults, F_UNPRODUCED, at, i, slot, name, minus_one);
    Py_INCREF(src);
    int rc = 0;
    Py_ssize_t s = PyLong_AsSsize_t(src);
    if (s == -1 && PyErr_Occurred())
        rc = -1;
    else if (s >= 0) { /* a node, not a graph source */
        rc = mine == NULL ? 0 : PyList_Append(mine, src);
        if (rc == 0 && s >= i) rc = add_fault(faults, s == i ? F_OWN : F_LATE, at, i, slot, name, src);
    }
    Py_DECREF(src);
    return rc;
}

/* the read names of one node (number i): its predecessors, and the faults of what it reads */
static PyObject *node_preds(PyObject *seq, Py_ssize_t i, PyObject *producer, PyObject *faults, Py_ssize_t *at,
                            PyObject *minus_one, int want) {
    PyObject *mine = want ? PyList_New(0) : NULL;
    if (want && mine == NULL) return NULL;
    for (Py_ssize_t slot = 0; slot < PySequence_Fast_GET_SIZE(seq); slot++) { /* as scan_outputs: held */
        PyObject *name = PySequence_Fast_GET_ITEM(seq, slot);
        Py_INCREF(name);
        ++*at;
        int rc = input_name(name, i, slot, producer, faults, *at, minus_one, mine);
        Py_DECREF(name);
        if (rc < 0) {
            Py_XDECREF(mine);
            return NULL;
        }
    }
    if (mine == NULL) Py_RETURN_NONE;
    return mine;
}

/* the read names of every node: preds gets each node's predecessors (preds NULL: none are kept) */
static int scan_inputs(PyObject *inputs, PyObject *producer, PyObject *faults, Py_ssize_t *at, PyObject *minus_one,
                       PyObject *preds) {
    PyObject *it = PyObject_GetIter(inputs), *ins;
    if (it == NULL) return -1;
    Py_ssize_t i = 0;
    while ((ins = PyIter_Next(it)) != NULL) {
        PyObject *seq = PySequence_Fast(ins, "_wire.structure: a node's inputs must be a sequence");
        Py_DECREF(ins);
        if (seq == NULL) goto fail;
        PyObject *mine = node_preds(seq, i++, producer, faults, at, minus_one, preds != NULL);
        Py_DECREF(seq);
        if (mine == NULL) goto fail;
        int rc = preds == NULL ? 0 : PyList_Append(preds, mine);
        Py_DECREF(mine);
        if (rc < 0) goto fail;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
fail:
    Py_DECREF(it);
    return -1;
}

static PyObject *py_structure(PyObject *self, PyObject *args) {
    PyObject *inputs, *outputs, *sources, *graph_outputs;
    int want_preds = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO|p:structure", &inputs, &outputs, &sources, &graph_outputs, &want_preds))
        return NULL;
    PyObject *producer = PyDict_New(), *faults = PyDict_New(), *preds = want_preds ? PyList_New(0) : Py_NewRef(Py_None);
    PyObject *minus_one = PyLong_FromLong(-1), *it = NULL, *result = NULL;
    Py_ssize_t at = 0;
    if (producer == NULL || faults == NULL || preds == NULL || minus_one == NULL) goto done;
    if (PyDict_Update(producer, sources) < 0) goto done;
    if (scan_outputs(outputs, producer, faults, &at) < 0) goto done;
    if (scan_inputs(inputs, producer, faults, &at, minus_one, want_preds ? preds : NULL) < 0) goto done;
    if ((it = PyObject_GetIter(graph_outputs)) == NULL) goto done;
    Py_ssize_t slot = 0;
    PyObject *name;
    while ((name = PyIter_Next(it)) != NULL) {
        ++at;
        int has = PyDict_Contains(producer, name);
        int rc = has < 0 ? -1 : has ? 0 : add_fault(faults, F_OUTPUT, at, -1, slot, name, minus_one);
        Py_DECREF(name);
        if (rc < 0) goto done;
        slot++;
    }
    if (PyErr_Occurred()) goto done;
    result = PyTuple_Pack(3, producer, preds, faults);
done:
    Py_XDECREF(it);
    Py_XDECREF(producer);
    Py_XDECREF(faults);
    Py_XDECREF(preds);
    Py_XDECREF(minus_one);
    return result;
}

/* -- the reader's first pass over a graph's nodes: reader._scan_nodes, compiled ---------------------------------
 *
 * node_scan(nodes, twice_node, bad_node, shape_ops, attribute, tensor) -> (stop, holders, reads_from, shaped,
 * constant_nodes, uses_default): the same pass as bcast.onnx.reader._scan_nodes, which is its reference. It reads
 * each node's fields by name (a decoded node and onnx's own alike) in the same order, and stops at the first node
 * whose name, op type, domain or an output is not text, whose op type is empty, or which is twice_node: the reader
 * looks at that one, and the nodes after it, in Python. */

static PyObject *str_name, *str_op_type, *str_domain, *str_input, *str_output, *str_attribute, *str_data_location;
static PyObject *holder_fields[6]; /* AttributeProto's fields that hold a tensor or a graph: "t" first */

/* 1 when every item of the sequence is a str, 0 when one is not, -1 with an error set */
static int all_text(PyObject *obj) {
    PyObject *seq = PySequence_Fast(obj, "_wire.node_scan: a node's inputs and outputs must be sequences");
    if (seq == NULL) return -1;
    int ok = 1;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++)
        if (!PyUnicode_Check(PySequence_Fast_GET_ITEM(seq, k))) {
            ok = 0;
            break;
        }
    Py_DECREF(seq);
    return ok;
}

/* reader._holds: 1 when the bodies' and external data's checks must look at the attribute, 0 when not, -1 */
static int holds(PyObject *a, PyObject *attribute, PyObject *tensor) {
    if ((PyObject *)Py_TYPE(a) != attribute) return 1;
    PyObject *fields = PyObject_GenericGetDict(a, NULL);
    if (fields == NULL) return -1;
    int count = 0, rc = 0;
    PyObject *t = NULL;
    for (int k = 0; k < 6; k++) {
        PyObject *v = PyDict_GetItemWithError(fields, holder_fields[k]); /* borrowed */
        if (v == NULL) {
            if (PyErr_Occurred()) {
                rc = -1;
                goto done;
            }
            continue;
        }
        count++;
        if (k == 0) t = v;
    }
    if (count == 0)
        rc = 0;
    else if (count > 1 || t == NULL || (PyObject *)Py_TYPE(t) != tensor)
        rc = 1;
    else {
        PyObject *tf = PyObject_GenericGetDict(t, NULL);
        rc = tf == NULL ? -1 : PyDict_Contains(tf, str_data_location);
        Py_XDECREF(tf);
    }
done:
    Py_DECREF(fields);
    return rc;
}

/* the first of the node's attributes the later checks must look at: 1 when there is one, 0 when not, -1 */
static int any_holds(PyObject *attrs, PyObject *attribute, PyObject *tensor) {
    PyObject *seq = PySequence_Fast(attrs, "_wire.node_scan: a node's attributes must be a sequence");
    if (seq == NULL) return -1;
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, k);
        Py_INCREF(a);
        rc = holds(a, attribute, tensor);
        Py_DECREF(a);
    }
    Py_DECREF(seq);
    return rc;
}

static int append_index(PyObject *list, Py_ssize_t i) {
    PyObject *index = PyLong_FromSsize_t(i);
    if (index == NULL) return -1;
    int rc = PyList_Append(list, index);
    Py_DECREF(index);
    return rc;
}

/* what the scan notes of one node (number i) that it passes over; 1 when it stops there, 0 when it goes on, -1 */
static int scan_node(PyObject *node, Py_ssize_t i, Py_ssize_t twice_node, Py_ssize_t bad_node, PyObject *shape_ops,
                     PyObject *attribute, PyObject *tensor, PyObject *holders, Py_ssize_t *reads_from,
                     PyObject *shaped, PyObject *constants, int *uses_default) {
    PyObject *op = NULL, *domain = NULL, *name = NULL, *got = NULL;
    int rc = -1;
    if ((op = PyObject_GetAttr(node, str_op_type)) == NULL) goto done;
    if ((domain = PyObject_GetAttr(node, str_domain)) == NULL) goto done;
    if (i == twice_node) {
        rc = 1;
        goto done;
    }
    if ((name = PyObject_GetAttr(node, str_name)) == NULL) goto done;
    if (!PyUnicode_Check(name) || !PyUnicode_Check(op) || !PyUnicode_Check(domain) || PyUnicode_GET_LENGTH(op) == 0) {
        rc = 1;
        goto done;
    }
    if ((got = PyObject_GetAttr(node, str_output)) == NULL) goto done;
    int text = all_text(got);
    Py_CLEAR(got);
    if (text <= 0) {
        rc = text < 0 ? -1 : 1;
        goto done;
    }
    if ((got = PyObject_GetAttr(node, str_attribute)) == NULL) goto done;
    int held = any_holds(got, attribute, tensor);
    Py_CLEAR(got);
    if (held < 0 || (held && append_index(holders, i) < 0)) goto done;
    if (*reads_from < 0) {
        if (i == bad_node)
            *reads_from = i;
        else {
            if ((got = PyObject_GetAttr(node, str_input)) == NULL) goto done;
            text = all_text(got);
            Py_CLEAR(got);
            if (text < 0) goto done;
            if (!text) *reads_from = i;
        }
    }
    if (PyUnicode_GET_LENGTH(domain) == 0 || PyUnicode_CompareWithASCIIString(domain, "ai.onnx") == 0) {
        *uses_default = 1;
        if (PyUnicode_CompareWithASCIIString(op, "Constant") == 0) {
            if (append_index(constants, i) < 0) goto done;
        } else {
            int shape = PyDict_Contains(shape_ops, op);
            if (shape < 0 || (shape && append_index(shaped, i) < 0)) goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(op);
    Py_XDECREF(domain);
    Py_XDECREF(name);
    return rc;
}

static PyObject *py_node_scan(PyObject *self, PyObject *args) {
    PyObject *nodes, *shape_ops, *attribute, *tensor;
    Py_ssize_t twice_node, bad_node;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnnO!OO:node_scan", &nodes, &twice_node, &bad_node, &PyDict_Type, &shape_ops,
                          &attribute, &tensor))
        return NULL;
    PyObject *seq = PySequence_Fast(nodes, "_wire.node_scan: the nodes must be a sequence");
    if (seq == NULL) return NULL;
    PyObject *holders = PyList_New(0), *shaped = PyList_New(0), *constants = PyList_New(0), *result = NULL;
    Py_ssize_t reads_from = -1, i = 0;
    int uses_default = 0;
    if (holders == NULL || shaped == NULL || constants == NULL) goto done;
    for (; i < PySequence_Fast_GET_SIZE(seq); i++) { /* the size looked at again at every step, as all_text does */
        PyObject *node = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(node);
        int rc = scan_node(node, i, twice_node, bad_node, shape_ops, attribute, tensor, holders, &reads_from, shaped,
                           constants, &uses_default);
        Py_DECREF(node);
        if (rc < 0) goto done;
        if (rc) break;
    }
    if (reads_from < 0)
        result = Py_BuildValue("(nOOOOO)", i, holders, Py_None, shaped, constants, uses_default ? Py_True : Py_False);
    else
        result = Py_BuildValue("(nOnOOO)", i, holders, reads_from, shaped, constants, uses_default ? Py_True : Py_False);
done:
    Py_DECREF(seq);
    Py_XDECREF(holders);
    Py_XDECREF(shaped);
    Py_XDECREF(constants);
    return result;
}

/* -- the strip walk's field loop (wire.py's _fields over a message it copies unread but for its big fields) ---- */

/* a varint of buf[pos:end]: 1 with *out and *next set, 0 when it runs past end or over ten bytes; *wide is set
 * when its value needs more than 64 bits (a tag or a length that wire.py then refuses) */
static int plain_varint(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, uint64_t *out, Py_ssize_t *next,
                        int *wide) {
    uint64_t value = 0;
    *wide = 0;
    for (Py_ssize_t i = pos; i < end && i - pos < 10; i++) {
        unsigned b = buf[i];
        if (i - pos == 9 && (b & 0x7F) > 1) *wide = 1;
        value |= (uint64_t)(b & 0x7F) << (7 * (i - pos));
        if (b < 0x80) {
            *out = value;
            *next = i + 1;
            return 1;
        }
    }
    return 0;
}

#define MAX_FIELD_NUMBER ((1u << 29) - 1)

/* big_fields(buf, start, end, wires, keep): the fields of the message in buf[start:end] whose value (wire type 2)
 * is longer than keep bytes, as (at, body, pos, field, wire), and where the well-formed fields stop (end when all
 * are). wires[f] is the wire type the message's schema gives field f (255: none) for f below len(wires). From a
 * field that is not well formed on, wire.py's own loop reads the message and refuses the field in its words. */
static PyObject *py_big_fields(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, nwires, keep;
    const char *wires;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nny#n:big_fields", &view, &start, &end, &wires, &nwires, &keep)) return NULL;
    PyObject *out = NULL, *result = NULL;
    if (start < 0 || end > view.len || start > end) {
        PyErr_SetString(PyExc_ValueError, "_wire.big_fields: start and end must lie within the buffer");
        goto done;
    }
    if ((out = PyList_New(0)) == NULL) goto done;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t pos = start;
    while (pos < end) {
        Py_ssize_t at = pos, body;
        uint64_t key, n;
        int wide;
        if (!plain_varint(buf, pos, end, &key, &pos, &wide) || wide) {
            pos = at;
            break;
        }
        uint64_t field = key >> 3;
        unsigned wire = (unsigned)(key & 7);
        if (field == 0 || field > MAX_FIELD_NUMBER || wire > 5 || wire == 3 || wire == 4 ||
            (field < (uint64_t)nwires && (unsigned char)wires[field] != 255 && (unsigned char)wires[field] != wire)) {
            pos = at;
            break;
        }
        body = pos;
        if (wire == 2) {
            if (!plain_varint(buf, pos, end, &n, &body, &wide) || wide || n > (uint64_t)(end - body)) {
                pos = at;
                break;
            }
            pos = body + (Py_ssize_t)n;
        } else if (wire == 0) {
            if (!plain_varint(buf, pos, end, &n, &pos, &wide)) {
                pos = at;
                break;
            }
        } else {
            Py_ssize_t size = wire == 5 ? 4 : 8;
            if (size > end - pos) {
                pos = at;
                break;
            }
            pos += size;
        }
        if (wire == 2 && pos - body > keep) {
            PyObject *f = Py_BuildValue("(nnnKI)", at, body, pos, (unsigned long long)field, wire);
            int rc = f == NULL ? -1 : PyList_Append(out, f);
            Py_XDECREF(f);
            if (rc < 0) goto done;
        }
    }
    result = Py_BuildValue("(On)", out, pos);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return result;
}

/* -- a small tensor's values (graph_read._raw_values), compiled ----------------------------------------------- */

static PyObject *str_data_type, *str_dims, *str_raw_data, *str_segment;

/* raw_value(t, spec): graph_read.initializer_value of a decoded TensorProto of the commonest kind (float32, int32,
 * int64 or double values in raw_data, little-endian, not stored outside the file, not a segment, of at most the
 * limit's elements), or None for any other tensor (Python takes it the longer way). spec is (TensorProto, Value,
 * Expr.const, {data_type: dtype name}, float limit, int limit). */
static PyObject *py_raw_value(PyObject *self, PyObject *args) {
    PyObject *t, *spec;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO!:raw_value", &t, &PyTuple_Type, &spec)) return NULL;
    if (PyTuple_GET_SIZE(spec) != 6) {
        PyErr_SetString(PyExc_TypeError, "_wire.raw_value: spec must be a 6-tuple");
        return NULL;
    }
    PyObject *tensor_type = PyTuple_GET_ITEM(spec, 0), *value_type = PyTuple_GET_ITEM(spec, 1);
    PyObject *constant = PyTuple_GET_ITEM(spec, 2), *names = PyTuple_GET_ITEM(spec, 3);
    Py_ssize_t float_limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 4));
    Py_ssize_t int_limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 5));
    if ((float_limit == -1 || int_limit == -1) && PyErr_Occurred()) return NULL;
    if ((PyObject *)Py_TYPE(t) != tensor_type || !PyDict_Check(names)) Py_RETURN_NONE;
    PyObject *d = PyObject_GenericGetDict(t, NULL), *dims = NULL, *data = NULL, *result = NULL;
    if (d == NULL) return NULL;
    PyObject *raw = PyDict_GetItemWithError(d, str_raw_data), *code = PyDict_GetItemWithError(d, str_data_type);
    PyObject *shape = PyDict_GetItemWithError(d, str_dims), *place = PyDict_GetItemWithError(d, str_data_location);
    int segment = PyErr_Occurred() ? -1 : PyDict_Contains(d, str_segment);
    if (segment < 0) goto done;
    long type = code != NULL && PyLong_CheckExact(code) ? PyLong_AsLong(code) : -1;
    if (type == -1 && PyErr_Occurred()) goto done;
    int size = type == 1 || type == 6 ? 4 : type == 7 || type == 11 ? 8 : 0;
    int located = place != NULL && PyLong_CheckExact(place) && PyLong_AsLong(place) == 1;
    if (PyErr_Occurred()) goto done;
    if (raw == NULL || !PyBytes_CheckExact(raw) || size == 0 || segment || located ||
        (shape != NULL && !PyList_CheckExact(shape))) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t rank = shape == NULL ? 0 : PyList_GET_SIZE(shape), count = 1;
    Py_ssize_t limit = type == 1 || type == 11 ? float_limit : int_limit;
    if ((dims = PyTuple_New(rank)) == NULL) goto done;
    for (Py_ssize_t k = 0; k < rank; k++) {
        PyObject *dim = PyList_GET_ITEM(shape, k);
        long long n = PyLong_CheckExact(dim) ? PyLong_AsLongLong(dim) : -1;
        if (n == -1 && PyErr_Occurred()) PyErr_Clear();
        if (n < 0 || (n > 0 && count > limit)) { /* a negative or huge dim, or not an int: the longer way */
            result = Py_NewRef(Py_None);
            goto done;
        }
        count = n > limit ? limit + 1 : count * (Py_ssize_t)n;
        PyObject *e = PyObject_CallOneArg(constant, dim);
        if (e == NULL) goto done;
        PyTuple_SET_ITEM(dims, k, e);
    }
    if (count > limit || PyBytes_GET_SIZE(raw) != count * size) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if ((data = PyTuple_New(count)) == NULL) goto done;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    for (Py_ssize_t k = 0; k < count; k++, p += size) {
        PyObject *x;
        if (type == 1 || type == 11) {
            double v = type == 1 ? PyFloat_Unpack4((const char *)p, 1) : PyFloat_Unpack8((const char *)p, 1);
            if (v == -1.0 && PyErr_Occurred()) goto done;
            x = PyFloat_FromDouble(v);
        } else {
            uint64_t u = 0;
            for (int b = size - 1; b >= 0; b--) u = (u << 8) | p[b];
            long long v = size == 4 ? (long long)(int32_t)(uint32_t)u : (long long)u;
            PyObject *n = PyLong_FromLongLong(v);
            x = n == NULL ? NULL : PyObject_CallOneArg(constant, n);
            Py_XDECREF(n);
        }
        if (x == NULL) goto done;
        PyTuple_SET_ITEM(data, k, x);
    }
    PyObject *dtype = PyDict_GetItemWithError(names, code); /* borrowed */
    if (dtype == NULL) {
        if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *call[3] = {dtype, dims, data};
    result = PyObject_Vectorcall(value_type, call, 3, NULL);
done:
    Py_XDECREF(dims);
    Py_XDECREF(data);
    Py_DECREF(d);
    return result;
}

/* -- the conversion of decoded nodes into the neutral graph's (graph_read._nodes) ------------------------- */

/* the fields of bcast.graph.Node, in the order of its dataclass fields, and what each is set from */
enum { N_INDEX, N_NAME, N_OP, N_INPUTS, N_OUTPUTS, N_ATTRS, N_DOMAIN, N_BODIES, N_PATH, N_SOURCE, N_FIELDS };

/* AttributeProto's types read here (the others take graph_read._attrs's way) and the field each keeps its value in */
enum { A_FLOAT = 1, A_INT = 2, A_STRING = 3, A_TENSOR = 4, A_FLOATS = 6, A_INTS = 7, A_STRINGS = 8 };

static PyObject *str_type, *str_ref_attr_name, *str_f, *str_i, *str_s, *str_t, *str_floats, *str_ints, *str_strings,
    *str_zero_float, *str_zero_int, *str_empty;

/* text of bytes as graph_read._attrs decodes it: UTF-8, errors replaced; anything else as it is (a new reference) */
static PyObject *decoded(PyObject *v) {
    if (PyBytes_Check(v)) return PyUnicode_DecodeUTF8(PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), "replace");
    Py_INCREF(v);
    return v;
}

/* graph_read._attrs of a node whose attributes are all of the plain types or tensors (each tensor's value made by
 * tensor_value(t), graph_read.initializer_value): the attributes as a new dict, or NULL with no error set when one is
 * not (a graph, a reference to a function's attribute...): the caller then takes the Python way for the node */
static PyObject *plain_attrs(PyObject *list, PyObject *attr_type, PyObject *tensor_value) {
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
        PyObject *a = PyList_GET_ITEM(list, k);
        if ((PyObject *)Py_TYPE(a) != attr_type) goto fail;
        PyObject *d = PyObject_GenericGetDict(a, NULL);
        if (d == NULL) goto fail;
        PyObject *name = PyDict_GetItemWithError(d, str_name), *type = PyDict_GetItemWithError(d, str_type);
        PyObject *ref = PyDict_GetItemWithError(d, str_ref_attr_name);
        long t = type != NULL && PyLong_CheckExact(type) ? PyLong_AsLong(type) : -1;
        if (PyErr_Occurred() || name == NULL || !PyUnicode_CheckExact(name) || (ref != NULL && ref != str_empty &&
            (!PyUnicode_CheckExact(ref) || PyUnicode_GET_LENGTH(ref) > 0))) {
            Py_DECREF(d);
            goto fail;
        }
        PyObject *field, *absent;
        switch (t) {
        case A_FLOAT: field = str_f, absent = str_zero_float; break;
        case A_INT: field = str_i, absent = str_zero_int; break;
        case A_STRING: field = str_s, absent = NULL; break;
        case A_FLOATS: field = str_floats, absent = NULL; break;
        case A_INTS: field = str_ints, absent = NULL; break;
        case A_STRINGS: field = str_strings, absent = NULL; break;
        case A_TENSOR: field = str_t, absent = NULL; break;
        default: Py_DECREF(d); goto fail;
        }
        PyObject *v = PyDict_GetItemWithError(d, field), *value = NULL;
        if (v == NULL && PyErr_Occurred()) {
            Py_DECREF(d);
            goto fail;
        }
        if (t == A_TENSOR && v == NULL) { /* a tensor attribute holding no tensor: the Python way says what it is */
            Py_DECREF(d);
            goto fail;
        }
        if (t == A_TENSOR) {
            value = PyObject_CallOneArg(tensor_value, v);
        } else if (t == A_FLOAT || t == A_INT) {
            value = v != NULL ? v : absent;
            Py_INCREF(value);
        } else if (t == A_STRING) {
            value = v != NULL ? decoded(v) : PyUnicode_FromStringAndSize("", 0);
        } else {
            value = v != NULL ? PySequence_List(v) : PyList_New(0);
            if (value != NULL && t == A_STRINGS && PyList_GET_SIZE(value) > 0 && PyBytes_Check(PyList_GET_ITEM(value, 0)))
                for (Py_ssize_t j = 0; j < PyList_GET_SIZE(value); j++) {
                    PyObject *x = decoded(PyList_GET_ITEM(value, j));
                    if (x == NULL) {
                        Py_CLEAR(value);
                        break;
                    }
                    PyList_SetItem(value, j, x);
                }
        }
        Py_DECREF(d);
        if (value == NULL) goto fail;
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        int rc = PyDict_SetItem(out, name, value);
        Py_DECREF(name);
        Py_DECREF(value);
        if (rc < 0) goto fail;
    }
    return out;
fail: /* an error is set, or none where an attribute is of another kind ("other") */
    Py_DECREF(out);
    return NULL;
}

/* a decoded node's input or output names as a new list: its own list when the node is let go of (consume) */
static PyObject *names_of(PyObject *d, PyObject *field, int consume) {
    PyObject *v = PyDict_GetItemWithError(d, field);
    if (v == NULL) return PyErr_Occurred() ? NULL : PyList_New(0);
    if (consume && PyList_CheckExact(v)) {
        Py_INCREF(v);
        return v;
    }
    return PySequence_List(v);
}

/* the Node of the decoded NodeProto n (its __dict__ d) at index i; NULL with no error set when its name, op or
 * domain is not text (the caller takes the Python way) */
static PyObject *one_node(PyObject *d, Py_ssize_t i, PyObject *path, int consume, PyTypeObject *node_type,
                          const Py_ssize_t *offsets, PyObject *attr_type, PyObject *nothing, PyObject *tensor_value,
                          PyObject *attrs_of, PyObject *n) {
    PyObject *v[N_FIELDS] = {NULL};
    PyObject *op = PyDict_GetItemWithError(d, str_op_type), *domain = PyDict_GetItemWithError(d, str_domain), *name = PyDict_GetItemWithError(d, str_name);
    if (PyErr_Occurred()) return NULL;
    if ((op != NULL && !PyUnicode_CheckExact(op)) || (domain != NULL && !PyUnicode_CheckExact(domain)) ||
        (name != NULL && !PyUnicode_CheckExact(name)))
        return NULL;
    v[N_OP] = op != NULL ? op : str_empty;
    Py_INCREF(v[N_OP]);
    PyUnicode_InternInPlace(&v[N_OP]);
    v[N_DOMAIN] = domain != NULL ? domain : str_empty;
    Py_INCREF(v[N_DOMAIN]);
    PyUnicode_InternInPlace(&v[N_DOMAIN]);
    if (name != NULL && PyUnicode_GET_LENGTH(name) > 0) {
        Py_INCREF(name);
        v[N_NAME] = name;
    } else if ((v[N_NAME] = PyUnicode_FromFormat("%U_%zd", v[N_OP], i)) == NULL) {
        goto fail;
    }
    if ((v[N_INDEX] = PyLong_FromSsize_t(i)) == NULL) goto fail;
    if ((v[N_INPUTS] = names_of(d, str_input, consume)) == NULL) goto fail;
    if ((v[N_OUTPUTS] = names_of(d, str_output, consume)) == NULL) goto fail;
    PyObject *attributes = PyDict_GetItemWithError(d, str_attribute);
    if (attributes == NULL && PyErr_Occurred()) goto fail;
    int any = attributes == NULL ? 0 : PyObject_IsTrue(attributes);
    if (any < 0) goto fail;
    if (!any) {
        v[N_ATTRS] = nothing, v[N_BODIES] = nothing;
        Py_INCREF(nothing);
        Py_INCREF(nothing);
    } else {
        PyObject *plain = PyList_CheckExact(attributes) ? plain_attrs(attributes, attr_type, tensor_value) : NULL;
        if (plain != NULL) {
            v[N_ATTRS] = plain, v[N_BODIES] = nothing;
            Py_INCREF(nothing);
        } else {
            if (PyErr_Occurred()) goto fail;
            PyObject *pair = PyObject_CallFunctionObjArgs(attrs_of, n, v[N_NAME], NULL);
            if (pair == NULL) goto fail;
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
                Py_DECREF(pair);
                PyErr_SetString(PyExc_TypeError, "_wire.nodes: attrs_of must return (attrs, bodies)");
                goto fail;
            }
            v[N_ATTRS] = PyTuple_GET_ITEM(pair, 0), v[N_BODIES] = PyTuple_GET_ITEM(pair, 1);
            Py_INCREF(v[N_ATTRS]);
            Py_INCREF(v[N_BODIES]);
            Py_DECREF(pair);
        }
    }
    v[N_PATH] = path;
    Py_INCREF(path);
    PyObject *span = PyDict_GetItemWithError(d, str_span);
    if (span == NULL && PyErr_Occurred()) goto fail;
    v[N_SOURCE] = span != NULL ? span : Py_None;
    Py_INCREF(v[N_SOURCE]);
    PyObject *node = node_type->tp_alloc(node_type, 0);
    if (node == NULL) goto fail;
    for (int k = 0; k < N_FIELDS; k++) *(PyObject **)((char *)node + offsets[k]) = v[k]; /* the references move */
    return node;
fail:
    for (int k = 0; k < N_FIELDS; k++) Py_XDECREF(v[k]);
    return NULL;
}

/* nodes(messages, path, consume, layout, attrs_of, slow): graph_read._nodes over a list of decoded nodes.
 * layout is (Node, its fields' member descriptors in order, NodeProto, AttributeProto, the shared empty mapping,
 * graph_read.initializer_value);
 * attrs_of(n, label) gives (attrs, bodies) of a node with attributes of other types than the plain ones, and
 * slow(n, i) the Node of a message that is not a decoded NodeProto with text for its name, op and domain. With
 * consume, each message's entry is made None once converted. */
static PyObject *py_nodes(PyObject *self, PyObject *args) {
    PyObject *messages, *path, *layout, *attrs_of, *slow;
    int consume;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!pO!OO:nodes", &PyList_Type, &messages, &PyTuple_Type, &path, &consume,
                          &PyTuple_Type, &layout, &attrs_of, &slow))
        return NULL;
    if (PyTuple_GET_SIZE(layout) != 6 || !PyType_Check(PyTuple_GET_ITEM(layout, 0))) {
        PyErr_SetString(PyExc_TypeError, "_wire.nodes: layout must be (Node, its 10 members, NodeProto, "
                                         "AttributeProto, nothing, tensor_value)");
        return NULL;
    }
    PyTypeObject *node_type = (PyTypeObject *)PyTuple_GET_ITEM(layout, 0);
    PyObject *members = PyTuple_GET_ITEM(layout, 1), *node_proto = PyTuple_GET_ITEM(layout, 2);
    PyObject *attr_type = PyTuple_GET_ITEM(layout, 3), *nothing = PyTuple_GET_ITEM(layout, 4);
    PyObject *tensor_value = PyTuple_GET_ITEM(layout, 5);
    Py_ssize_t offsets[N_FIELDS];
    if (slot_offsets(node_type, members, N_FIELDS, offsets, "_wire.nodes") < 0) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(messages);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages) && i < count; i++) {
        PyObject *n = PyList_GET_ITEM(messages, i), *node = NULL;
        Py_INCREF(n);
        if ((PyObject *)Py_TYPE(n) == node_proto) {
            PyObject *d = PyObject_GenericGetDict(n, NULL);
            if (d != NULL) {
                node = one_node(d, i, path, consume, node_type, offsets, attr_type, nothing, tensor_value, attrs_of, n);
                Py_DECREF(d);
            }
        }
        if (node == NULL && !PyErr_Occurred()) node = PyObject_CallFunction(slow, "On", n, i);
        Py_DECREF(n);
        int rc = node == NULL ? -1 : PyList_Append(out, node);
        Py_XDECREF(node);
        if (rc < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (consume && i < PyList_GET_SIZE(messages)) {
            Py_INCREF(Py_None);
            PyList_SetItem(messages, i, Py_None);
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"merge", py_merge, METH_VARARGS,
     "merge(obj, data, pos, end, depth, context): decode data[pos:end] into obj, as bcast.onnx.proto._merge does."},
    {"fields_read", py_fields_read, METH_NOARGS, "fields_read(): how many fields merge has read since import."},
    {"structure", py_structure, METH_VARARGS,
     "structure(inputs, outputs, sources, graph_outputs, preds=True): bcast.files.graph_structure's scan, as "
     "(producer, preds, faults); preds None where not wanted."},
    {"node_scan", py_node_scan, METH_VARARGS,
     "node_scan(nodes, twice_node, bad_node, shape_ops, attribute, tensor): bcast.onnx.reader._scan_nodes, as "
     "(stop, holders, reads_from, shaped, constant_nodes, uses_default)."},
    {"big_fields", py_big_fields, METH_VARARGS,
     "big_fields(buf, start, end, wires, keep): the fields longer than keep bytes of the message in buf[start:end], "
     "as (at, body, pos, field, wire), and where its well-formed fields stop."},
    {"raw_value", py_raw_value, METH_VARARGS,
     "raw_value(t, spec): bcast.onnx.graph_read.initializer_value of a small decoded tensor of raw float32, int32, "
     "int64 or double values, or None."},
    {"nodes", py_nodes, METH_VARARGS,
     "nodes(messages, path, consume, layout, attrs_of, slow): bcast.onnx.graph_read._nodes over a list of decoded "
     "nodes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wire", "The field loop of bcast.onnx.proto's decoder and the reader's scans of a graph's "
    "structure and nodes, compiled.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wire(void) {
    str_span = PyUnicode_InternFromString("_span");
    str_extend = PyUnicode_InternFromString("extend");
    str_append = PyUnicode_InternFromString("append");
    if (str_span == NULL || str_extend == NULL || str_append == NULL) return NULL;
    static const char *const fields[7] = {"name", "op_type", "domain", "input", "output", "attribute",
                                          "data_location"};
    PyObject **field_strs[7] = {&str_name, &str_op_type, &str_domain, &str_input, &str_output, &str_attribute,
                                &str_data_location};
    for (int k = 0; k < 7; k++)
        if ((*field_strs[k] = PyUnicode_InternFromString(fields[k])) == NULL) return NULL;
    static const char *const held[6] = {"t", "g", "sparse_tensor", "tensors", "graphs", "sparse_tensors"};
    for (int k = 0; k < 6; k++)
        if ((holder_fields[k] = PyUnicode_InternFromString(held[k])) == NULL) return NULL;
    static const char *const tensor_fields[4] = {"data_type", "dims", "raw_data", "segment"};
    PyObject **tensor_strs[4] = {&str_data_type, &str_dims, &str_raw_data, &str_segment};
    for (int k = 0; k < 4; k++)
        if ((*tensor_strs[k] = PyUnicode_InternFromString(tensor_fields[k])) == NULL) return NULL;
    static const char *const attr_fields[9] = {"type", "ref_attr_name", "f", "i", "s", "t", "floats", "ints",
                                               "strings"};
    PyObject **attr_strs[9] = {&str_type, &str_ref_attr_name, &str_f, &str_i, &str_s, &str_t, &str_floats, &str_ints,
                               &str_strings};
    for (int k = 0; k < 9; k++)
        if ((*attr_strs[k] = PyUnicode_InternFromString(attr_fields[k])) == NULL) return NULL;
    if ((str_zero_float = PyFloat_FromDouble(0.0)) == NULL || (str_zero_int = PyLong_FromLong(0)) == NULL ||
        (str_empty = PyUnicode_InternFromString("")) == NULL)
        return NULL;
    static const char *const kinds[5] = {"twice", "unproduced", "own", "late", "output"};
    for (int k = 0; k < 5; k++)
        if ((fault_kinds[k] = PyUnicode_InternFromString(kinds[k])) == NULL) return NULL;
    return PyModule_Create(&module);
}
