/* The loops of bcast's compiled kernels, and the table through which the module finds them.
 *
 * kernels.c is compiled once per instruction set (baseline x86-64, AVX2, AVX-512; or once,
 * elsewhere) with BC_ISA naming the table it fills; module.c picks a table at import.
 *
 * Every elementwise loop writes n contiguous output elements from operands that are each
 * contiguous (stride = item size), a repeated scalar (stride 0), or any other stride: the
 * caller (module.c) handles outputs of other strides by computing into a small block first.
 */
#ifndef BCAST_KERNELS_H
#define BCAST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef ptrdiff_t bc_int;

/* dtypes, in the order of bcast.engines.numpy.compiled.DTYPES */
enum { BC_BOOL, BC_I32, BC_I64, BC_F32, BC_F64, BC_F16, BC_BF16, BC_NDTYPES };

/* binary ops, in the order of bcast.engines.numpy.compiled.OPS */
enum {
    BC_ADD, BC_SUB, BC_MUL, BC_DIV, BC_POW, BC_MAX, BC_MIN,
    BC_GT, BC_GE, BC_LT, BC_LE, BC_EQ,
    BC_AND, BC_OR, BC_XOR,          /* logical, on bools */
    BC_BAND, BC_BOR, BC_BXOR,       /* bitwise, on ints */
    BC_NOPS
};

/* out[0:n] = a op b; returns the number of integer zero divisors met (their results are 0) */
typedef bc_int (*bc_binary_fn)(char *out, const char *a, const char *b, bc_int n, bc_int sa, bc_int sb);
/* out[0:n] = c ? x : y, elements of one size */
typedef void (*bc_where_fn)(char *out, const char *c, const char *x, const char *y, bc_int n, bc_int sc, bc_int sx,
                            bc_int sy);
/* out[0:n] = a (stride sa: 0 repeats one element) */
typedef void (*bc_copy_fn)(char *out, const char *a, bc_int n, bc_int sa);
/* acc[k] (+)= sum over r of g[k*sk + r*sr] for k < nk; acc holds the accumulator type */
typedef void (*bc_sum_fn)(char *acc, const char *g, bc_int nk, bc_int nr, bc_int sk, bc_int sr, int add);
/* bytes of contiguous memory written with non-temporal stores (no read for ownership) */
typedef void (*bc_stream_fn)(char *dst, const char *src, size_t nbytes);

typedef struct {
    const char *name;
    bc_binary_fn binary[BC_NOPS][BC_NDTYPES];
    bc_where_fn where[4];  /* by log2 of the item size: 1, 2, 4, 8 bytes */
    bc_copy_fn copy[4];
    bc_sum_fn sum[BC_NDTYPES];
    bc_stream_fn stream;
    void (*fence)(void);
} bc_table;

void bc_table_baseline(bc_table *t);
#if defined(__x86_64__) || defined(_M_X64)
void bc_table_avx2(bc_table *t);
void bc_table_avx512(bc_table *t);
#endif

#endif
