/* A 1x1 convolution, the depthwise one that reads it and, optionally, the 1x1
 * projection that reads that (see pointwise_depthwise.h).
 *
 * Without the projection a task is (image, band of output rows, group of
 * GROUP 16-channel blocks of the expanded tensor); with it, (image, band):
 * the projection needs every expanded channel of a row. A task keeps a ring
 * of three expanded rows (each with a zero column on either side, the
 * depthwise padding) and, for each output row, computes the rows it lacks,
 * then filters the three (and projects the filtered row). The 1x1
 * convolutions keep PX pixels by GROUP blocks in registers and broadcast
 * each input value against the weights of its channel; the depthwise one
 * keeps its nine taps and DX output pixels in registers.
 */

#include <math.h>
#include <omp.h>

#include "oneapi/dnnl/dnnl.h"

#include "shim.h"
#include "own_kernel.h"
#include "pointwise_depthwise.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define PWDW_KERNEL 1
#endif

#define VL 16       /* channels per block: float32 lanes of one AVX-512 register */
#define GROUP 2     /* blocks a 1x1 register block computes together */
#define PX 12       /* pixels of a 1x1 register block (PX x GROUP accumulators) */
#define DX 8        /* output pixels of a depthwise register block */
#define MIN_BAND 8  /* output rows a band has at least */
#define TAPS 9

typedef struct {
    own_kernel base;
    int64_t n, ic, h, w;   /* src */
    int64_t oc, stride, oh, ow;
    int64_t pc;            /* the projection's output channels; 0: none */
    int sum;               /* the projection adds src (a residual) */
    float lo[2], hi[2];    /* the bounds of the 1x1 and the depthwise convolution */
    int bounded[2];        /* whether each has bounds ((-inf, inf): none, NaN kept) */
    int threads;           /* the OpenMP team size the scratchpad is sized for */
} pwdw_conv;

int pwdw_available(void) {
#ifdef PWDW_KERNEL
    return 1;
#else
    return 0;
#endif
}

static int64_t blocks_of(int64_t channels) {
    return (channels + VL - 1) / VL;
}

/* Floats of one block of an expanded row in the ring: W pixels and the two
 * zero columns. */
static size_t block_floats(const pwdw_conv *k) {
    return (size_t)(k->w + 2) * VL;
}

/* The blocks of the expanded tensor a task holds: all of them where it
 * projects, else one group. */
static int64_t ring_blocks(const pwdw_conv *k) {
    return k->pc ? k->oc / VL : GROUP;
}

/* A thread's scratch: the ring, then (projecting) one filtered row. */
static size_t thread_floats(const pwdw_conv *k) {
    return 3 * ring_blocks(k) * block_floats(k) + (k->pc ? (size_t)k->oc * k->ow : 0);
}

static size_t scratchpad_size(const own_kernel *kk) {
    const pwdw_conv *k = (const pwdw_conv *)kk;
    return (size_t)k->threads * thread_floats(k) * sizeof(float);
}

#ifdef PWDW_KERNEL
#define INLINE static inline __attribute__((always_inline))

/* min(max(y, lo), hi), NaN becoming lo as relu and clip give it on the numpy
 * path (max returns its second operand where one is NaN). */
INLINE __m512 clamp(__m512 y, __m512 lo, __m512 hi) {
    return _mm512_min_ps(_mm512_max_ps(y, lo), hi);
}

/* A 1x1 convolution's row: its input, its weights and where it goes. */
typedef struct {
    const float *in;     /* block 0, pixel 0 of the input row */
    size_t in_plane;     /* floats from one input block to the next */
    int64_t k;           /* input channels */
    const float *wt;     /* (k, ldw): the first output block's column */
    int64_t ldw;
    const float *bias;   /* the first output block's */
    const float *add;    /* a residual laid out as out, or NULL */
    float *out;          /* block 0, pixel 0 of the output row */
    size_t out_plane, add_plane;
    int bounded;         /* clamp to [lo, hi] (the projection is linear) */
    float lo, hi;
} gemm_row;

/* Pixels [x, x + P) of a 1x1 convolution's row, G output blocks: each from
 * the bias, the input channels in order, then the residual or the bounds
 * (or neither).
 * P and G are constants where it is called, so that the accumulators stay
 * in registers. */
INLINE void gemm_pixels(const gemm_row *r, int64_t x, int P, int G) {
    __m512 acc[PX][GROUP];
    for (int g = 0; g < G; g++) {
        const __m512 b = _mm512_loadu_ps(r->bias + g * VL);
        for (int p = 0; p < P; p++) acc[p][g] = b;
    }
    /* One loop over the channels (not blocks, then lanes): the accumulators
     * stay in registers throughout. */
    const float *in = r->in + x * VL, *wc = r->wt;
    for (int64_t c = 0; c < r->k; c++, wc += r->ldw) {
        const float *pixels = in + (c / VL) * r->in_plane + c % VL;
        __m512 wv[GROUP];
        for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_ps(wc + g * VL);
        for (int p = 0; p < P; p++) {
            const __m512 a = _mm512_set1_ps(pixels[p * VL]);
            for (int g = 0; g < G; g++) acc[p][g] = _mm512_fmadd_ps(a, wv[g], acc[p][g]);
        }
    }
    /* One loop for each epilogue (a branch inside would keep the
     * accumulators in memory); the bounds made here, not kept in registers
     * through the products. */
    float *out = r->out + x * VL;
    if (r->add) {
        const float *add = r->add + x * VL;
        for (int g = 0; g < G; g++)
            for (int p = 0; p < P; p++)
                _mm512_storeu_ps(out + g * r->out_plane + p * VL, _mm512_add_ps(
                        acc[p][g], _mm512_loadu_ps(add + g * r->add_plane + p * VL)));
    } else if (r->bounded) {
        const __m512 lo = _mm512_set1_ps(r->lo), hi = _mm512_set1_ps(r->hi);
        for (int g = 0; g < G; g++)
            for (int p = 0; p < P; p++)
                _mm512_storeu_ps(out + g * r->out_plane + p * VL, clamp(acc[p][g], lo, hi));
    } else {
        for (int g = 0; g < G; g++)
            for (int p = 0; p < P; p++) _mm512_storeu_ps(out + g * r->out_plane + p * VL, acc[p][g]);
    }
}

/* The chunks a row of `width` pixels is split into: as even as can be, each
 * at most `most` pixels (a register block), so that no chunk is short of
 * the accumulators that keep the FMA units busy. */
static int64_t chunks(int64_t width, int64_t most) {
    return (width + most - 1) / most;
}

/* gemm_pixels over `count` chunks of P pixels from x, for each chunk size and
 * block count a function of its own: one function holding them all ran out
 * of registers (accumulators spilled). */
typedef void (*gemm_run)(const gemm_row *r, int64_t x, int64_t count);
#define GEMM_RUN(P, G) \
    static __attribute__((noinline)) void gemm_run_##P##_##G(const gemm_row *r, int64_t x, \
            int64_t count) { \
        for (int64_t i = 0; i < count; i++) gemm_pixels(r, x + i * P, P, G); \
    }
#define GEMM_RUNS(G) GEMM_RUN(1, G) GEMM_RUN(2, G) GEMM_RUN(3, G) GEMM_RUN(4, G) \
    GEMM_RUN(5, G) GEMM_RUN(6, G) GEMM_RUN(7, G) GEMM_RUN(8, G) GEMM_RUN(9, G) \
    GEMM_RUN(10, G) GEMM_RUN(11, G) GEMM_RUN(12, G)
GEMM_RUNS(1)
GEMM_RUNS(2)
static const gemm_run GEMM_RUNS_BY[GROUP][PX] = {
    {gemm_run_1_1, gemm_run_2_1, gemm_run_3_1, gemm_run_4_1, gemm_run_5_1, gemm_run_6_1,
     gemm_run_7_1, gemm_run_8_1, gemm_run_9_1, gemm_run_10_1, gemm_run_11_1, gemm_run_12_1},
    {gemm_run_1_2, gemm_run_2_2, gemm_run_3_2, gemm_run_4_2, gemm_run_5_2, gemm_run_6_2,
     gemm_run_7_2, gemm_run_8_2, gemm_run_9_2, gemm_run_10_2, gemm_run_11_2, gemm_run_12_2}};

/* The `runs` of a row of `width` pixels: n chunks as even as can be, the
 * larger (one pixel more) first. */
static void row_chunks(const gemm_run *runs, const gemm_row *r, int64_t width) {
    const int64_t n = chunks(width, PX), p = width / n, larger = width % n;
    if (larger) runs[p](r, 0, larger);   /* p + 1 pixels each */
    runs[p - 1](r, larger * (p + 1), n - larger);
}

/* Output blocks [b0, b1) of a 1x1 convolution's row, GROUP at a time. */
static void gemm(gemm_row r, int64_t width, int64_t b0, int64_t b1) {
    const float *wt = r.wt, *bias = r.bias, *add = r.add;
    float *out = r.out;
    for (int64_t b = b0; b < b1; b += GROUP) {
        r.wt = wt + b * VL;
        r.bias = bias + b * VL;
        r.add = add ? add + b * r.add_plane : NULL;
        r.out = out + (b - b0) * r.out_plane;
        row_chunks(GEMM_RUNS_BY[(b1 - b >= GROUP ? GROUP : 1) - 1], &r, width);
    }
}

/* Output pixels [x, x + Q) of one block from the ring rows t (NULL: a
 * padding row); s is the stride; clamped to [lo, hi] where bounded. */
INLINE void dw_pixels(const float *const t[3], const __m512 w[TAPS], __m512 bias,
        int bounded, __m512 lo, __m512 hi, float *out, int64_t x, int Q, int s) {
    __m512 acc[DX];
    for (int q = 0; q < Q; q++) acc[q] = bias;
    for (int r = 0; r < 3; r++) {
        if (!t[r]) continue;
        for (int c = 0; c < 3; c++)
            for (int q = 0; q < Q; q++)
                acc[q] = _mm512_fmadd_ps(w[r * 3 + c],
                        _mm512_loadu_ps(t[r] + ((x + q) * s + c) * VL), acc[q]);
    }
    for (int q = 0; q < Q; q++)
        _mm512_storeu_ps(out + (x + q) * VL, bounded ? clamp(acc[q], lo, hi) : acc[q]);
}

/* `count` chunks of Q output pixels of one block from pixel x (weights wt:
 * nine taps of 16 channels; stride s), the taps and the bias in registers. */
INLINE void dw_chunks(const float *const t[3], const float *wt, const float *bias,
        int bounded, __m512 lo, __m512 hi, float *out, int64_t x, int64_t count, int Q,
        int s) {
    __m512 w[TAPS];
    for (int i = 0; i < TAPS; i++) w[i] = _mm512_loadu_ps(wt + i * VL);
    const __m512 b = _mm512_loadu_ps(bias);
    for (int64_t i = 0; i < count; i++) dw_pixels(t, w, b, bounded, lo, hi, out, x + i * Q, Q, s);
}

/* dw_chunks for each chunk size and stride, each a function of its own: one
 * function holding them all ran out of registers (the taps spilled). */
typedef void (*dw_run)(const float *const t[3], const float *wt, const float *bias,
        int bounded, __m512 lo, __m512 hi, float *out, int64_t x, int64_t count);
#define DW_RUN(Q, S) \
    static __attribute__((noinline)) void dw_run_##Q##_##S(const float *const t[3], \
            const float *wt, const float *bias, int bounded, __m512 lo, __m512 hi, \
            float *out, int64_t x, int64_t count) { \
        dw_chunks(t, wt, bias, bounded, lo, hi, out, x, count, Q, S); \
    }
#define DW_RUNS(S) DW_RUN(1, S) DW_RUN(2, S) DW_RUN(3, S) DW_RUN(4, S) \
    DW_RUN(5, S) DW_RUN(6, S) DW_RUN(7, S) DW_RUN(8, S)
DW_RUNS(1)
DW_RUNS(2)
static const dw_run DW_RUNS_BY[2][DX] = {
    {dw_run_1_1, dw_run_2_1, dw_run_3_1, dw_run_4_1, dw_run_5_1, dw_run_6_1, dw_run_7_1,
     dw_run_8_1},
    {dw_run_1_2, dw_run_2_2, dw_run_3_2, dw_run_4_2, dw_run_5_2, dw_run_6_2, dw_run_7_2,
     dw_run_8_2}};

/* One output row of one block: n chunks as even as can be, the larger
 * (one pixel more) first. */
static void dw_row(const pwdw_conv *k, const float *const t[3], const float *wt,
        const float *bias, float *out) {
    const __m512 lo = _mm512_set1_ps(k->lo[1]), hi = _mm512_set1_ps(k->hi[1]);
    const dw_run *runs = DW_RUNS_BY[k->stride - 1];
    const int64_t n = chunks(k->ow, DX), q = k->ow / n, larger = k->ow % n;
    const int bounded = k->bounded[1];
    if (larger) runs[q](t, wt, bias, bounded, lo, hi, out, 0, larger);   /* q + 1 pixels each */
    runs[q - 1](t, wt, bias, bounded, lo, hi, out, larger * (q + 1), n - larger);
}

typedef struct {
    const float *src, *wt, *bias, *dwt, *dwb, *pwt, *pwb;
    float *dst;
} operands;

/* Output rows [y0, y1) of blocks [b0, b1) of the expanded tensor of image n
 * (all of them where the task projects); scratch as thread_floats says. */
static void band(const pwdw_conv *k, const operands *o, int64_t n, int64_t y0, int64_t y1,
        int64_t b0, int64_t b1, float *scratch) {
    const size_t stride = block_floats(k), row = ring_blocks(k) * stride;
    const int64_t in_blocks = blocks_of(k->ic);
    const float *img = o->src + (size_t)n * in_blocks * VL * k->h * k->w;
    for (int64_t i = 0; i < 3 * ring_blocks(k); i++) {   /* the zero columns */
        _mm512_storeu_ps(scratch + i * stride, _mm512_setzero_ps());
        _mm512_storeu_ps(scratch + i * stride + (k->w + 1) * VL, _mm512_setzero_ps());
    }
    float *filtered = scratch + 3 * row;   /* projecting: a row of every block */
    const size_t in_plane = (size_t)k->h * k->w * VL, out_plane = (size_t)k->oh * k->ow * VL;
    int64_t held[3] = {-1, -1, -1};   /* the expanded row in each ring slot */
    for (int64_t y = y0; y < y1; y++) {
        float *t[3];
        for (int r = 0; r < 3; r++) {
            const int64_t iy = y * k->stride - 1 + r;
            t[r] = NULL;
            if (iy < 0 || iy >= k->h) continue;
            t[r] = scratch + (iy % 3) * row;
            if (held[iy % 3] == iy) continue;
            gemm((gemm_row){img + iy * k->w * VL, in_plane, k->ic, o->wt, k->oc, o->bias,
                            NULL, t[r] + VL, stride, 0, k->bounded[0], k->lo[0],
                            k->hi[0]},
                 k->w, b0, b1);
            held[iy % 3] = iy;
        }
        for (int64_t b = b0; b < b1; b++) {
            const float *tb[3];
            for (int r = 0; r < 3; r++) tb[r] = t[r] ? t[r] + (b - b0) * stride : NULL;
            float *out = k->pc ? filtered + b * k->ow * VL
                               : o->dst + (((size_t)n * (k->oc / VL) + b) * k->oh + y)
                                          * k->ow * VL;
            dw_row(k, tb, o->dwt + b * TAPS * VL, o->dwb + b * VL, out);
        }
        if (k->pc) {
            const int64_t pblocks = blocks_of(k->pc);
            float *out = o->dst + ((size_t)n * pblocks * k->oh + y) * k->ow * VL;
            const float *add = k->sum ? img + y * k->w * VL : NULL;
            gemm((gemm_row){filtered, (size_t)k->ow * VL, k->oc, o->pwt, pblocks * VL, o->pwb,
                            add, out, out_plane, in_plane, 0, 0.f, 0.f},
                 k->ow, 0, pblocks);
        }
    }
}
#endif

static dnnl_status_t run(const own_kernel *kk, void *scratch, const dnnl_exec_arg_t *args) {
    const pwdw_conv *k = (const pwdw_conv *)kk;
#ifdef PWDW_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(kk, args, ptr));
    const int p = k->pc ? 2 : 0;   /* the projection's arguments come before dst */
    const operands o = {ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], p ? ptr[5] : NULL,
                        p ? ptr[6] : NULL, ptr[5 + p]};
    const int64_t blocks = k->oc / VL, groups = k->pc ? 1 : (blocks + GROUP - 1) / GROUP;
    /* Bands of rows, so that the images' bands split evenly among the threads
     * (each thread then takes whole bands, every group of each), where the
     * rows allow bands of MIN_BAND rows: the groups of a band are unequal
     * where the blocks are odd, and a band's first expanded rows are
     * computed twice. */
    int64_t bands = 1;
    while ((k->n * bands) % k->threads != 0 && k->oh / (bands + 1) >= MIN_BAND) bands++;
    const int64_t tasks = k->n * bands * groups;
    #pragma omp parallel num_threads(k->threads)
    {
        float *mine = (float *)scratch + omp_get_thread_num() * thread_floats(k);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t n = task / (bands * groups), s = task / groups % bands;
            const int64_t b0 = k->pc ? 0 : task % groups * GROUP;
            const int64_t b1 = k->pc ? blocks : (b0 + GROUP < blocks ? b0 + GROUP : blocks);
            band(k, &o, n, k->oh * s / bands, k->oh * (s + 1) / bands, b0, b1, mine);
        }
    }
    return dnnl_success;
#else
    (void)k; (void)scratch; (void)args;
    return mmx_fail(dnnl_unimplemented, "pwdw_conv run: built without AVX-512");
#endif
}

static const own_kernel_ops PWDW_OPS = {"pwdw:avx512_core", scratchpad_size, run};

dnnl_status_t pwdw_conv_create(own_kernel **kernel, const int64_t *src_dims, int64_t oc,
        int64_t stride, int64_t pc, int sum, const float *lo, const float *hi) {
    PASS(own_kernel_new(kernel, sizeof(pwdw_conv), &PWDW_OPS));
    pwdw_conv *k = (pwdw_conv *)*kernel;
    REQUIRE(pwdw_available() && oc > 0 && oc % VL == 0 && (stride == 1 || stride == 2)
            && src_dims[0] > 0 && src_dims[1] > 0 && src_dims[2] > 0 && src_dims[3] > 0
            && pc >= 0 && (!sum || (pc == src_dims[1] && stride == 1)),
            dnnl_unimplemented);
    k->n = src_dims[0];
    k->ic = src_dims[1];
    k->h = src_dims[2];
    k->w = src_dims[3];
    k->oc = oc;
    k->stride = stride;
    k->oh = (k->h - 1) / stride + 1;   /* 3x3, padding 1 */
    k->ow = (k->w - 1) / stride + 1;
    k->pc = pc;
    k->sum = sum;
    for (int i = 0; i < 2; i++) {
        k->lo[i] = lo[i];
        k->bounded[i] = lo[i] != -INFINITY || hi[i] != INFINITY;
        k->hi[i] = hi[i];
    }
    k->threads = omp_get_max_threads();
    const int64_t out = pc ? pc : oc;
    const dnnl_dims_t src = {k->n, k->ic, k->h, k->w}, dst = {k->n, out, k->oh, k->ow};
    const dnnl_dims_t weights = {k->ic, oc}, channels = {oc}, taps = {oc / VL, TAPS, VL};
    /* The projection's columns padded to whole blocks (zeros), as dst's. */
    const dnnl_dims_t project = {oc, blocks_of(pc) * VL}, project_bias = {blocks_of(pc) * VL};
    own_kernel *base = &k->base;
    PASS(own_kernel_arg(base, DNNL_ARG_SRC, 4, src, dnnl_f32, dnnl_aBcd16b));
    PASS(own_kernel_arg(base, DNNL_ARG_WEIGHTS, 2, weights, dnnl_f32, dnnl_ab));
    PASS(own_kernel_arg(base, DNNL_ARG_BIAS, 1, channels, dnnl_f32, dnnl_a));
    PASS(own_kernel_arg(base, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, 3, taps, dnnl_f32,
            dnnl_abc));
    PASS(own_kernel_arg(base, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, 1, channels, dnnl_f32,
            dnnl_a));
    if (pc) {
        PASS(own_kernel_arg(base, DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_WEIGHTS, 2,
                project, dnnl_f32, dnnl_ab));
        PASS(own_kernel_arg(base, DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_BIAS, 1,
                project_bias, dnnl_f32, dnnl_a));
    }
    PASS(own_kernel_arg(base, DNNL_ARG_DST, 4, dst, dnnl_f32, dnnl_aBcd16b));
    return dnnl_success;
}
