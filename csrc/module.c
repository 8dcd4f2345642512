/* bcast.engines.numpy._kernels: the Python face of the compiled loops (plain C API, no NumPy headers).
 *
 * Arrays arrive through the buffer protocol, already lined up by the Python caller
 * (bcast.engines.numpy.compiled): the output and every operand have the same number of
 * dims and the same shape, broadcast operands having stride 0. Each call computes the
 * rows lo..hi of the output (a row: the last axis; rows: every index of the axes before
 * it, in C order) with the GIL released, so that the engine's threads each take a range.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernels.h"

static bc_table table;

static int size_index(Py_ssize_t item) {
    switch (item) {
        case 1: return 0;
        case 2: return 1;
        case 4: return 2;
        case 8: return 3;
        default: return -1;
    }
}

#define MAXOPS 4
#define MAXDIMS 64
#define BLOCK 8192 /* bytes of one output block computed before it is streamed or scattered */

/* The output and its operands: each one's first element, and one walk over rows lo..hi of a shape
 * that the caller has coalesced (every operand's strides given for that shape, 0 where it repeats). */
typedef struct {
    Py_buffer view[MAXOPS];
    int n, nd; /* operands, dims */
    Py_ssize_t shape[MAXDIMS], strides[MAXOPS][MAXDIMS], idx[MAXDIMS];
    Py_ssize_t col, left; /* where in the current row, elements still to do */
    char *ptr[MAXOPS];
    Py_ssize_t item[MAXOPS];
} iter;

static void release(iter *it) {
    for (int i = 0; i < it->n; i++) PyBuffer_Release(&it->view[i]);
    it->n = 0;
}

static int as_long(PyObject *o, Py_ssize_t *v) {
    *v = PyLong_AsSsize_t(o);
    return (*v == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int read_ints(PyObject *tup, Py_ssize_t *out, int nd) {
    if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != nd) {
        PyErr_SetString(PyExc_ValueError, "_kernels: a shape or strides tuple of the wrong length");
        return -1;
    }
    for (int k = 0; k < nd; k++)
        if (as_long(PyTuple_GET_ITEM(tup, k), &out[k]) < 0) return -1;
    return 0;
}

static Py_ssize_t row_count(iter *it) {
    Py_ssize_t r = 1;
    for (int k = 0; k + 1 < it->nd; k++) r *= it->shape[k];
    return r;
}

/* objs: the output (written) and n - 1 operands; shape: a tuple of 1..64 dims; strides: one tuple per array */
static int iter_open(iter *it, PyObject *const *objs, int n, PyObject *shape, PyObject *strides, Py_ssize_t lo,
                     Py_ssize_t hi) {
    it->n = 0;
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) < 1 || PyTuple_GET_SIZE(shape) > MAXDIMS ||
        !PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != n) {
        PyErr_SetString(PyExc_ValueError, "_kernels: shape must have 1 to 64 dims, strides one tuple per array");
        return -1;
    }
    it->nd = (int)PyTuple_GET_SIZE(shape);
    if (read_ints(shape, it->shape, it->nd) < 0) return -1;
    for (int i = 0; i < n; i++)
        if (read_ints(PyTuple_GET_ITEM(strides, i), it->strides[i], it->nd) < 0) return -1;
    Py_ssize_t total = row_count(it) * it->shape[it->nd - 1];
    for (int k = 0; k < it->nd; k++)
        if (it->shape[k] < 1) total = -1;
    if (lo < 0 || lo > hi || hi > total) {
        PyErr_Format(PyExc_ValueError, "_kernels: elements %zd..%zd out of 0..%zd", lo, hi, total);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int flags = i == 0 ? (PyBUF_STRIDES | PyBUF_WRITABLE) : PyBUF_STRIDES;
        if (PyObject_GetBuffer(objs[i], &it->view[i], flags) < 0) {
            release(it);
            return -1;
        }
        it->n++;
        it->item[i] = it->view[i].itemsize;
        it->ptr[i] = (char *)it->view[i].buf;
    }
    Py_ssize_t inner = it->shape[it->nd - 1];
    it->col = lo % inner; /* the first row starts part way along */
    it->left = hi - lo;
    Py_ssize_t row = lo / inner;
    for (int k = it->nd - 2; k >= 0; k--) { /* the first row as a multi-index of the axes before the last */
        it->idx[k] = row % it->shape[k];
        row /= it->shape[k];
        for (int i = 0; i < n; i++) it->ptr[i] += it->idx[k] * it->strides[i][k];
    }
    return 0;
}

/* The next stretch of one row: m elements from column it->col; 0 when the range is done. Pointers in *p. */
static Py_ssize_t iter_segment(iter *it, char **p) {
    if (it->left <= 0) return 0;
    Py_ssize_t inner = it->shape[it->nd - 1], m = inner - it->col;
    if (m > it->left) m = it->left;
    for (int i = 0; i < it->n; i++) p[i] = it->ptr[i] + it->col * it->strides[i][it->nd - 1];
    return m;
}

static void iter_next(iter *it, Py_ssize_t done) {
    it->left -= done;
    it->col = 0;
    for (int k = it->nd - 2; k >= 0; k--) {
        if (++it->idx[k] < it->shape[k]) {
            for (int i = 0; i < it->n; i++) it->ptr[i] += it->strides[i][k];
            return;
        }
        for (int i = 0; i < it->n; i++) it->ptr[i] -= (it->idx[k] - 1) * it->strides[i][k];
        it->idx[k] = 0;
    }
}

#define INNER_S(it, i) ((it)->strides[i][(it)->nd - 1])

/* Where a block computed into tmp goes: streamed (contiguous, non-temporal) or scattered (any stride). */
static void put(char *dst, Py_ssize_t so, const char *tmp, Py_ssize_t m, Py_ssize_t item, int nt) {
    if (so == item) {
        if (nt)
            table.stream(dst, tmp, (size_t)(m * item));
        else
            memcpy(dst, tmp, (size_t)(m * item));
        return;
    }
    for (Py_ssize_t i = 0; i < m; i++) memcpy(dst + i * so, tmp + i * item, (size_t)item);
}

/* binary(op, dtype, out, a, b, shape, strides, lo, hi, stream) -> number of integer zero divisors met */
static PyObject *py_binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t op, dt, lo, hi, nt;
    if (nargs != 10 || as_long(args[0], &op) || as_long(args[1], &dt) || as_long(args[7], &lo) ||
        as_long(args[8], &hi) || as_long(args[9], &nt)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "binary(op, dtype, out, a, b, shape, strides, lo, hi, stream)");
        return NULL;
    }
    if (op < 0 || op >= BC_NOPS || dt < 0 || dt >= BC_NDTYPES || !table.binary[op][dt]) {
        PyErr_Format(PyExc_ValueError, "_kernels: no loop for op %zd on dtype %zd", op, dt);
        return NULL;
    }
    bc_binary_fn fn = table.binary[op][dt];
    iter it;
    if (iter_open(&it, args + 2, 3, args[5], args[6], lo, hi) < 0) return NULL;
    Py_ssize_t item = it.item[0], ia = it.item[1], zeros = 0;
    Py_ssize_t so = INNER_S(&it, 0), sa = INNER_S(&it, 1), sb = INNER_S(&it, 2);
    int direct = so == item && !nt;
    Py_BEGIN_ALLOW_THREADS
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / (item > ia ? item : ia);
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            zeros += fn(p[0], p[1], p[2], n, sa, sb);
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            zeros += fn(tmp, p[1] + s * sa, p[2] + s * sb, m, sa, sb);
            put(p[0] + s * so, so, tmp, m, item, (int)nt);
        }
    }
    if (nt) table.fence();
    Py_END_ALLOW_THREADS
    release(&it);
    return PyLong_FromSsize_t(zeros);
}

/* where(out, cond, x, y, shape, strides, lo, hi, stream) */
static PyObject *py_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t lo, hi, nt;
    if (nargs != 9 || as_long(args[6], &lo) || as_long(args[7], &hi) || as_long(args[8], &nt)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "where(out, cond, x, y, shape, strides, lo, hi, stream)");
        return NULL;
    }
    iter it;
    if (iter_open(&it, args, 4, args[4], args[5], lo, hi) < 0) return NULL;
    Py_ssize_t item = it.item[0];
    int k = size_index(item);
    if (k < 0 || it.item[1] != 1 || it.item[2] != item || it.item[3] != item) {
        release(&it);
        PyErr_SetString(PyExc_ValueError, "_kernels.where: item sizes 1, 2, 4 or 8 and a bool condition");
        return NULL;
    }
    bc_where_fn fn = table.where[k];
    Py_ssize_t so = INNER_S(&it, 0), sc = INNER_S(&it, 1), sx = INNER_S(&it, 2), sy = INNER_S(&it, 3);
    int direct = so == item && !nt;
    Py_BEGIN_ALLOW_THREADS
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / item;
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            fn(p[0], p[1], p[2], p[3], n, sc, sx, sy);
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            fn(tmp, p[1] + s * sc, p[2] + s * sx, p[3] + s * sy, m, sc, sx, sy);
            put(p[0] + s * so, so, tmp, m, item, (int)nt);
        }
    }
    if (nt) table.fence();
    Py_END_ALLOW_THREADS
    release(&it);
    Py_RETURN_NONE;
}

/* copy(out, a, shape, strides, lo, hi, stream): a broadcast copy */
static PyObject *py_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t lo, hi, nt;
    if (nargs != 7 || as_long(args[4], &lo) || as_long(args[5], &hi) || as_long(args[6], &nt)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "copy(out, a, shape, strides, lo, hi, stream)");
        return NULL;
    }
    iter it;
    if (iter_open(&it, args, 2, args[2], args[3], lo, hi) < 0) return NULL;
    Py_ssize_t item = it.item[0];
    int k = size_index(item);
    if (k < 0 || it.item[1] != item) {
        release(&it);
        PyErr_SetString(PyExc_ValueError, "_kernels.copy: item sizes 1, 2, 4 or 8, the same");
        return NULL;
    }
    bc_copy_fn fn = table.copy[k];
    Py_ssize_t so = INNER_S(&it, 0), sa = INNER_S(&it, 1);
    int direct = so == item && !nt;
    Py_BEGIN_ALLOW_THREADS
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / item;
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            fn(p[0], p[1], n, sa);
            continue;
        }
        if (nt && so == item && sa == item) { /* a contiguous source streams straight across */
            table.stream(p[0], p[1], (size_t)(n * item));
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            fn(tmp, p[1] + s * sa, m, sa);
            put(p[0] + s * so, so, tmp, m, item, (int)nt);
        }
    }
    if (nt) table.fence();
    Py_END_ALLOW_THREADS
    release(&it);
    Py_RETURN_NONE;
}

static PyObject *py_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t dt, lo, hi, add;
    if (nargs != 6 || as_long(args[0], &dt) || as_long(args[3], &lo) || as_long(args[4], &hi) ||
        as_long(args[5], &add)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "sum(dtype, acc, g, lo, hi, add)");
        return NULL;
    }
    if (dt < 0 || dt >= BC_NDTYPES || !table.sum[dt]) {
        PyErr_Format(PyExc_ValueError, "_kernels: no sum for dtype %zd", dt);
        return NULL;
    }
    Py_buffer acc, g;
    if (PyObject_GetBuffer(args[1], &acc, PyBUF_STRIDES | PyBUF_WRITABLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[2], &g, PyBUF_STRIDES) < 0) {
        PyBuffer_Release(&acc);
        return NULL;
    }
    if (g.ndim != 3 || acc.ndim != 1 || acc.shape[0] != g.shape[1] || acc.strides[0] != acc.itemsize || lo < 0 ||
        hi > g.shape[0] || lo > hi) {
        PyBuffer_Release(&acc);
        PyBuffer_Release(&g);
        PyErr_SetString(PyExc_ValueError, "_kernels.sum: g is (P, K, R), acc is a contiguous (K,), 0 <= lo <= hi <= P");
        return NULL;
    }
    bc_sum_fn fn = table.sum[dt];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t p = lo; p < hi; p++)
        fn((char *)acc.buf, (const char *)g.buf + p * g.strides[0], g.shape[1], g.shape[2], g.strides[1], g.strides[2],
           add || p > lo);
    if (lo == hi && !add) memset(acc.buf, 0, (size_t)(acc.shape[0] * acc.itemsize));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&acc);
    PyBuffer_Release(&g);
    Py_RETURN_NONE;
}

static PyObject *py_isa(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyUnicode_FromString(table.name);
}

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))py_binary, METH_FASTCALL, "binary(op, dtype, out, a, b, shape, strides, lo, hi, stream)"},
    {"where", (PyCFunction)(void (*)(void))py_where, METH_FASTCALL, "where(out, cond, x, y, shape, strides, lo, hi, stream)"},
    {"copy", (PyCFunction)(void (*)(void))py_copy, METH_FASTCALL, "copy(out, a, shape, strides, lo, hi, stream)"},
    {"sum", (PyCFunction)(void (*)(void))py_sum, METH_FASTCALL, "sum(dtype, acc, g, lo, hi, add)"},
    {"isa", py_isa, METH_NOARGS, "the instruction set whose loops were chosen at import"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", "bcast's compiled loops", -1, methods};

static int has_f16(void) { return table.binary[BC_ADD][BC_F16] != NULL; }

PyMODINIT_FUNC PyInit__kernels(void) {
    int chosen = 0;
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
    __builtin_cpu_init();
    const char *force = getenv("BCAST_ISA"); /* for tests of each table: baseline, avx2, avx512 */
    int want512 = !force || !strcmp(force, "avx512"), want2 = !force || !strcmp(force, "avx2") || want512;
    if (want512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        bc_table_avx512(&table);
        chosen = 1;
    } else if (want2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c")) {
        bc_table_avx2(&table);
        chosen = 1;
    }
#endif
    if (!chosen) bc_table_baseline(&table);
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "HAS_F16", has_f16()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
