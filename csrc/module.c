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

#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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
    char *ptr[MAXOPS], *base[MAXOPS];
    char *first[MAXOPS], *last[MAXOPS]; /* the lowest and one past the highest byte the layout reaches */
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
/* The lowest and highest byte offsets of the elements of a layout from its first: -1 when it has no
 * element or the offsets overflow. */
static int extent(int nd, const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t *lo, Py_ssize_t *hi) {
    *lo = *hi = 0;
    for (int k = 0; k < nd; k++) {
        Py_ssize_t d;
        if (shape[k] < 1) return -1;
        if (__builtin_mul_overflow(shape[k] - 1, strides[k], &d)) return -1;
        if (d < 0 ? __builtin_add_overflow(*lo, d, lo) : __builtin_add_overflow(*hi, d, hi)) return -1;
    }
    return 0;
}

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
        it->base[i] = (char *)it->view[i].buf;
        /* every element the layout reaches must be one of the array's own: never a read or a write outside it */
        Py_ssize_t want_lo, want_hi, own_lo, own_hi;
        Py_buffer *v = &it->view[i];
        int own = v->ndim == 0 ? (own_lo = own_hi = 0, 0) : v->strides ? extent(v->ndim, v->shape, v->strides, &own_lo, &own_hi)
                  : (own_lo = 0, own_hi = v->len - v->itemsize, v->len < v->itemsize ? -1 : 0);
        if (own < 0 || extent(it->nd, it->shape, it->strides[i], &want_lo, &want_hi) < 0 || want_lo < own_lo ||
            want_hi > own_hi) {
            PyErr_Format(PyExc_ValueError, "_kernels: the layout of array %d reaches outside its memory", i);
            release(it);
            return -1;
        }
        it->first[i] = it->base[i] + want_lo;
        it->last[i] = it->base[i] + want_hi + it->item[i];
    }
    return 0;
}

/* Position a copy of an opened iterator on the elements lo..hi (no GIL needed). */
static void iter_seek(iter *it, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t inner = it->shape[it->nd - 1];
    it->col = lo % inner; /* the first row starts part way along */
    it->left = hi - lo;
    Py_ssize_t row = lo / inner;
    for (int i = 0; i < it->n; i++) it->ptr[i] = it->base[i];
    for (int k = it->nd - 2; k >= 0; k--) { /* the first row as a multi-index of the axes before the last */
        it->idx[k] = row % it->shape[k];
        row /= it->shape[k];
        for (int i = 0; i < it->n; i++) it->ptr[i] += it->idx[k] * it->strides[i][k];
    }
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

/* Elements of a contiguous output run before its first 64-byte boundary: computed on their own, so
 * that the loop over the rest stores whole vectors that never straddle two cache lines (measured:
 * 3-5% on 4 MB in cache, with an output 16 bytes into a line, where malloc puts large arrays). */
static Py_ssize_t head(const char *o, Py_ssize_t item, Py_ssize_t n) {
    Py_ssize_t mis = (Py_ssize_t)((uintptr_t)o % 64);
    if (!mis || mis % item) return 0;
    Py_ssize_t h = (64 - mis) / item;
    return n > 4 * h ? h : 0;
}

/* -- the thread team ---------------------------------------------------------------------------
 *
 * One call's elements are cut into pieces that the calling thread and up to threads - 1 workers
 * claim from one atomic counter. Workers are plain threads that spin for SPIN_NS after each task
 * (the next op of a pipeline finds them running) and then sleep on a condition variable: handing
 * work to a sleeping thread costs tens of microseconds on a virtual machine, which is the whole
 * time of an op on a few megabytes (measured: 16 MB add, 660 us on the Python pool, see
 * bcast.engines.numpy.compiled). One task runs at a time; a second caller meanwhile computes alone.
 */
#define MAXT 256
#define SPIN_NS 1000000
/* the smallest piece worth a thread, in elements (a piece's fixed cost is well under a microsecond) */
#define MIN_PIECE 16384

typedef void (*piece_fn)(void *ctx, Py_ssize_t lo, Py_ssize_t hi);

static struct {
    pthread_mutex_t lock;       /* held by the caller whose task it is */
    pthread_mutex_t sleep_lock; /* with wake: where idle workers sleep */
    pthread_cond_t wake;
    _Atomic uint64_t state; /* the task's generation << 32 | the next piece to claim */
    _Atomic Py_ssize_t finished;
    _Atomic int sleepers;
    piece_fn fn;
    void *ctx;
    Py_ssize_t total, npieces;
    int want, nworkers;
} team = {.lock = PTHREAD_MUTEX_INITIALIZER, .sleep_lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void team_after_fork_in_child(void) {
    /* the parent's workers do not exist here, and its locks may have been held */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    team.lock = m;
    team.sleep_lock = m;
    team.wake = c;
    team.nworkers = 0;
    atomic_store(&team.sleepers, 0);
}

static void piece_bounds(Py_ssize_t i, Py_ssize_t *lo, Py_ssize_t *hi) {
    Py_ssize_t q = team.total / team.npieces, r = team.total % team.npieces;
    *lo = i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r);
}

/* take pieces of generation gen until none is left; a claim of a stale generation fails whole */
static void team_work(uint32_t gen) {
    uint64_t v = atomic_load(&team.state);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen || (Py_ssize_t)(uint32_t)v >= team.npieces) return;
        if (!atomic_compare_exchange_weak(&team.state, &v, v + 1)) continue;
        Py_ssize_t lo, hi;
        piece_bounds((Py_ssize_t)(uint32_t)v, &lo, &hi);
        team.fn(team.ctx, lo, hi);
        atomic_fetch_add(&team.finished, 1);
        v = atomic_load(&team.state);
    }
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *team_worker(void *arg) {
    int k = (int)(intptr_t)arg;
    uint32_t seen = (uint32_t)(atomic_load(&team.state) >> 32);
    for (;;) {
        uint32_t g;
        int64_t start = now_ns();
        unsigned spins = 0;
        while ((g = (uint32_t)(atomic_load(&team.state) >> 32)) == seen) {
            relax();
            if ((++spins & 1023) == 0 && now_ns() - start > SPIN_NS) {
                pthread_mutex_lock(&team.sleep_lock);
                atomic_fetch_add(&team.sleepers, 1);
                while ((g = (uint32_t)(atomic_load(&team.state) >> 32)) == seen)
                    pthread_cond_wait(&team.wake, &team.sleep_lock);
                atomic_fetch_sub(&team.sleepers, 1);
                pthread_mutex_unlock(&team.sleep_lock);
                break;
            }
        }
        seen = g;
        if (k < team.want) team_work(g);
    }
    return NULL;
}

/* fn over 0..total in pieces, on the calling thread and up to threads - 1 workers; called without the GIL */
static void team_run(piece_fn fn, void *ctx, Py_ssize_t total, int threads) {
    Py_ssize_t npieces = threads > 1 ? 4 * (Py_ssize_t)threads : 1;
    if (npieces > 1 && total / npieces < MIN_PIECE) npieces = total / MIN_PIECE;
    if (npieces <= 1 || pthread_mutex_trylock(&team.lock) != 0) {
        fn(ctx, 0, total); /* too small to share, or another caller has the team: alone */
        return;
    }
    while (team.nworkers < threads - 1) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 1 << 17); /* a piece's stack: a block of BLOCK bytes and an iterator */
        int failed = pthread_create(&t, &attr, team_worker, (void *)(intptr_t)team.nworkers);
        pthread_attr_destroy(&attr);
        if (failed) break; /* the system refuses more threads: go on with those there are */
        team.nworkers++;
    }
    team.fn = fn;
    team.ctx = ctx;
    team.total = total;
    team.npieces = npieces;
    team.want = threads - 1;
    atomic_store(&team.finished, 0);
    uint32_t gen = (uint32_t)(atomic_load(&team.state) >> 32) + 1;
    atomic_store(&team.state, (uint64_t)gen << 32); /* publishes the fields above */
    if (atomic_load(&team.sleepers) > 0) {
        pthread_mutex_lock(&team.sleep_lock);
        pthread_cond_broadcast(&team.wake);
        pthread_mutex_unlock(&team.sleep_lock);
    }
    team_work(gen);
    while (atomic_load(&team.finished) < npieces) relax();
    pthread_mutex_unlock(&team.lock);
}

/* team_run over the elements lo..hi */
typedef struct {
    piece_fn fn;
    void *ctx;
    Py_ssize_t lo;
} offset_ctx;

static void offset_piece(void *c_, Py_ssize_t lo, Py_ssize_t hi) {
    offset_ctx *c = c_;
    c->fn(c->ctx, c->lo + lo, c->lo + hi);
}

static void team_run_range(piece_fn fn, void *ctx, Py_ssize_t lo, Py_ssize_t hi, int threads) {
    offset_ctx c = {fn, ctx, lo};
    team_run(offset_piece, &c, hi - lo, threads);
}

/* -- the entry points ------------------------------------------------------------------------- */

typedef struct {
    iter it;
    bc_binary_fn fn;
    Py_ssize_t item, ia, so, sa, sb;
    int nt, fp;
    _Atomic Py_ssize_t zeros;
    _Atomic int fpe; /* the floating-point exceptions the pieces raised (fp: the op's are reported) */
} binary_ctx;

#define FP_FLAGS (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)

static void binary_piece(void *c_, Py_ssize_t lo, Py_ssize_t hi) {
    binary_ctx *c = c_;
    if (c->fp) feclearexcept(FP_FLAGS); /* each thread's own: what this piece raises */
    iter it = c->it;
    iter_seek(&it, lo, hi);
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / (c->item > c->ia ? c->item : c->ia), zeros = 0;
    int direct = c->so == c->item && !c->nt;
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            Py_ssize_t h = head(p[0], c->item, n);
            if (h) zeros += c->fn(p[0], p[1], p[2], h, c->sa, c->sb);
            zeros += c->fn(p[0] + h * c->item, p[1] + h * c->sa, p[2] + h * c->sb, n - h, c->sa, c->sb);
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            zeros += c->fn(tmp, p[1] + s * c->sa, p[2] + s * c->sb, m, c->sa, c->sb);
            put(p[0] + s * c->so, c->so, tmp, m, c->item, c->nt);
        }
    }
    if (c->nt) table.fence();
    if (zeros) atomic_fetch_add(&c->zeros, zeros);
    if (c->fp) {
        int f = fetestexcept(FP_FLAGS);
        if (f) atomic_fetch_or(&c->fpe, f);
    }
}

/* what binary, where and copy are called with; the last four arguments are always lo, hi, stream, threads */
#define BINARY_USAGE "binary(op, dtype, out, a, b, shape, strides, lo, hi, stream, threads) -> (zeros, fp_errors)"
#define WHERE_USAGE "where(out, cond, x, y, shape, strides, lo, hi, stream, threads)"
#define COPY_USAGE "copy(out, a, shape, strides, lo, hi, stream, threads) -> done"

/* A call's count and its last four arguments; a TypeError naming its usage where they are not
 * want arguments, or one of those four is not an int. */
static int read_call(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *usage, Py_ssize_t *lo,
                     Py_ssize_t *hi, Py_ssize_t *nt, Py_ssize_t *threads) {
    Py_ssize_t at = want - 4;
    if (nargs == want && !as_long(args[at], lo) && !as_long(args[at + 1], hi) && !as_long(args[at + 2], nt) &&
        !as_long(args[at + 3], threads))
        return 0;
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

static int check_threads(Py_ssize_t threads) {
    if (threads < 1 || threads > MAXT) {
        PyErr_Format(PyExc_ValueError, "_kernels: threads must be 1 to %d, got %zd", MAXT, threads);
        return -1;
    }
    return 0;
}

/* A call's context (a struct whose first member is its iter), allocated with its arrays opened;
 * NULL with the error set. ctx_run computes it on the team without the GIL; ctx_close frees it. */
static void *ctx_open(size_t size, PyObject *const *objs, int n, PyObject *shape, PyObject *strides, Py_ssize_t lo,
                      Py_ssize_t hi, Py_ssize_t threads) {
    if (check_threads(threads) < 0) return NULL;
    iter *c = PyMem_Malloc(size);
    if (!c) return PyErr_NoMemory();
    if (iter_open(c, objs, n, shape, strides, lo, hi) < 0) {
        PyMem_Free(c);
        return NULL;
    }
    return c;
}

static void ctx_run(piece_fn fn, void *c, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t threads) {
    Py_BEGIN_ALLOW_THREADS
    team_run_range(fn, c, lo, hi, (int)threads);
    Py_END_ALLOW_THREADS
}

static void ctx_close(void *c) {
    release((iter *)c);
    PyMem_Free(c);
}

/* NumPy's error kinds, in the order it reports them (divide, over, under, invalid) */
static int numpy_flags(int fe) {
    return (fe & FE_DIVBYZERO ? 1 : 0) | (fe & FE_OVERFLOW ? 2 : 0) | (fe & FE_UNDERFLOW ? 4 : 0) |
           (fe & FE_INVALID ? 8 : 0);
}

/* BINARY_USAGE: returns (the number of integer zero divisors met, the floating-point errors raised:
 * 1 divide by zero, 2 overflow, 4 underflow, 8 invalid; for float arithmetic, whose NumPy loops report them) */
static PyObject *py_binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t op, dt, lo, hi, nt, threads;
    if (read_call(args, nargs, 11, BINARY_USAGE, &lo, &hi, &nt, &threads) || as_long(args[0], &op) ||
        as_long(args[1], &dt))
        return NULL;
    if (op < 0 || op >= BC_NOPS || dt < 0 || dt >= BC_NDTYPES || !table.binary[op][dt]) {
        PyErr_Format(PyExc_ValueError, "_kernels: no loop for op %zd on dtype %zd", op, dt);
        return NULL;
    }
    binary_ctx *c = ctx_open(sizeof *c, args + 2, 3, args[5], args[6], lo, hi, threads);
    if (!c) return NULL;
    c->fn = table.binary[op][dt];
    c->item = c->it.item[0], c->ia = c->it.item[1];
    c->so = INNER_S(&c->it, 0), c->sa = INNER_S(&c->it, 1), c->sb = INNER_S(&c->it, 2);
    c->nt = (int)nt;
    c->fp = dt >= BC_F32 && op <= BC_POW;
    atomic_store(&c->zeros, 0);
    atomic_store(&c->fpe, 0);
    ctx_run(binary_piece, c, lo, hi, threads);
    Py_ssize_t zeros = atomic_load(&c->zeros);
    int fpe = numpy_flags(atomic_load(&c->fpe));
    ctx_close(c);
    return Py_BuildValue("(ni)", zeros, fpe);
}

typedef struct {
    iter it;
    bc_where_fn fn;
    Py_ssize_t item, so, sc, sx, sy;
    int nt;
} where_ctx;

static void where_piece(void *c_, Py_ssize_t lo, Py_ssize_t hi) {
    where_ctx *c = c_;
    iter it = c->it;
    iter_seek(&it, lo, hi);
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / c->item;
    int direct = c->so == c->item && !c->nt;
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            Py_ssize_t h = head(p[0], c->item, n);
            if (h) c->fn(p[0], p[1], p[2], p[3], h, c->sc, c->sx, c->sy);
            c->fn(p[0] + h * c->item, p[1] + h * c->sc, p[2] + h * c->sx, p[3] + h * c->sy, n - h, c->sc, c->sx, c->sy);
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            c->fn(tmp, p[1] + s * c->sc, p[2] + s * c->sx, p[3] + s * c->sy, m, c->sc, c->sx, c->sy);
            put(p[0] + s * c->so, c->so, tmp, m, c->item, c->nt);
        }
    }
    if (c->nt) table.fence();
}

/* WHERE_USAGE */
static PyObject *py_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t lo, hi, nt, threads;
    if (read_call(args, nargs, 10, WHERE_USAGE, &lo, &hi, &nt, &threads)) return NULL;
    where_ctx *c = ctx_open(sizeof *c, args, 4, args[4], args[5], lo, hi, threads);
    if (!c) return NULL;
    Py_ssize_t item = c->it.item[0];
    int k = size_index(item);
    if (k < 0 || c->it.item[1] != 1 || c->it.item[2] != item || c->it.item[3] != item) {
        ctx_close(c);
        PyErr_SetString(PyExc_ValueError, "_kernels.where: item sizes 1, 2, 4 or 8 and a bool condition");
        return NULL;
    }
    c->fn = table.where[k];
    c->item = item, c->so = INNER_S(&c->it, 0), c->sc = INNER_S(&c->it, 1);
    c->sx = INNER_S(&c->it, 2), c->sy = INNER_S(&c->it, 3), c->nt = (int)nt;
    ctx_run(where_piece, c, lo, hi, threads);
    ctx_close(c);
    Py_RETURN_NONE;
}

typedef struct {
    iter it;
    bc_copy_fn fn;
    Py_ssize_t item, so, sa;
    int nt;
} copy_ctx;

static void copy_piece(void *c_, Py_ssize_t lo, Py_ssize_t hi) {
    copy_ctx *c = c_;
    iter it = c->it;
    iter_seek(&it, lo, hi);
    _Alignas(64) char tmp[BLOCK];
    Py_ssize_t chunk = BLOCK / c->item, item = c->item;
    int direct = c->so == item && !c->nt;
    char *p[MAXOPS];
    for (Py_ssize_t n; (n = iter_segment(&it, p)) > 0; iter_next(&it, n)) {
        if (direct) {
            Py_ssize_t h = head(p[0], item, n);
            if (h) c->fn(p[0], p[1], h, c->sa);
            c->fn(p[0] + h * item, p[1] + h * c->sa, n - h, c->sa);
            continue;
        }
        if (c->nt && c->so == item && c->sa == item) { /* a contiguous source streams straight across */
            table.stream(p[0], p[1], (size_t)(n * item));
            continue;
        }
        if (c->nt && c->so == item && c->sa == 0) { /* one value repeated: one block of it, streamed over and over */
            c->fn(tmp, p[1], n < chunk ? n : chunk, 0);
            for (Py_ssize_t s = 0; s < n; s += chunk)
                table.stream(p[0] + s * item, tmp, (size_t)((n - s < chunk ? n - s : chunk) * item));
            continue;
        }
        for (Py_ssize_t s = 0; s < n; s += chunk) {
            Py_ssize_t m = n - s < chunk ? n - s : chunk;
            c->fn(tmp, p[1] + s * c->sa, m, c->sa);
            put(p[0] + s * c->so, c->so, tmp, m, item, c->nt);
        }
    }
    if (c->nt) table.fence();
}

/* Whether array i's layout reaches bytes that array j's does (by their extents, as NumPy's may_share_memory). */
static int overlap(const iter *it, int i, int j) { return it->first[i] < it->last[j] && it->first[j] < it->last[i]; }

/* Whether every element array i's layout reaches lies on a multiple of its item size (as NumPy's aligned flag). */
static int aligned(const iter *it, int i) {
    Py_ssize_t m = it->item[i];
    if ((uintptr_t)it->base[i] % (uintptr_t)m) return 0;
    for (int k = 0; k < it->nd; k++)
        if (it->strides[i][k] % m) return 0;
    return 1;
}

/* COPY_USAGE: a broadcast copy; False, with nothing written, where the arrays overlap or one is not aligned */
static PyObject *py_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t lo, hi, nt, threads;
    if (read_call(args, nargs, 8, COPY_USAGE, &lo, &hi, &nt, &threads)) return NULL;
    copy_ctx *c = ctx_open(sizeof *c, args, 2, args[2], args[3], lo, hi, threads);
    if (!c) return NULL;
    Py_ssize_t item = c->it.item[0];
    int k = size_index(item);
    if (k < 0 || c->it.item[1] != item) {
        ctx_close(c);
        PyErr_SetString(PyExc_ValueError, "_kernels.copy: item sizes 1, 2, 4 or 8, the same");
        return NULL;
    }
    if (overlap(&c->it, 0, 1) || !aligned(&c->it, 0) || !aligned(&c->it, 1)) {
        ctx_close(c);
        Py_RETURN_FALSE;
    }
    c->fn = table.copy[k];
    c->item = item, c->so = INNER_S(&c->it, 0), c->sa = INNER_S(&c->it, 1), c->nt = (int)nt;
    ctx_run(copy_piece, c, lo, hi, threads);
    ctx_close(c);
    Py_RETURN_TRUE;
}

/* sum(dtype, acc, g, lo, hi, add): acc[k] (+)= sum over p in lo..hi and r of g[p, k, r]; g is 3-d, acc 1-d */
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
    {"binary", (PyCFunction)(void (*)(void))py_binary, METH_FASTCALL, BINARY_USAGE},
    {"where", (PyCFunction)(void (*)(void))py_where, METH_FASTCALL, WHERE_USAGE},
    {"copy", (PyCFunction)(void (*)(void))py_copy, METH_FASTCALL, COPY_USAGE},
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
    static int at_fork = 0;
    if (!at_fork) {
        pthread_atfork(NULL, NULL, team_after_fork_in_child);
        at_fork = 1;
    }
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "HAS_F16", has_f16()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
