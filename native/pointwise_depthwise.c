/* A 1x1 convolution and the depthwise one that reads it (see
 * pointwise_depthwise.h).
 *
 * A task is (image, band of output rows, group of GROUP 16-channel blocks
 * of the expanded tensor). It keeps a ring of three expanded rows (each
 * with a zero column on either side, the depthwise padding) and, for each
 * output row, computes the rows it lacks, then filters the three. The 1x1
 * convolution keeps PX pixels by GROUP blocks in registers and broadcasts
 * each input value against the weights of its channel; the depthwise one
 * keeps its nine taps and DX output pixels in registers.
 */

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
#define GROUP 2     /* blocks of the expanded tensor a task computes together */
#define PX 12       /* pixels of a 1x1 register block (PX x GROUP accumulators) */
#define DX 8        /* output pixels of a depthwise register block */
#define MIN_BAND 8  /* output rows a band has at least */
#define TAPS 9

typedef struct {
    own_kernel base;
    int64_t n, ic, h, w;   /* src */
    int64_t oc, stride, oh, ow;
    float lo[2], hi[2];    /* the 1x1 convolution's bounds, then the depthwise one's */
    int threads;           /* the OpenMP team size the scratchpad is sized for */
} pwdw_conv;

int pwdw_available(void) {
#ifdef PWDW_KERNEL
    return 1;
#else
    return 0;
#endif
}

/* Floats of one block of an expanded row in the ring: W pixels and the two
 * zero columns. */
static size_t block_floats(const pwdw_conv *k) {
    return (size_t)(k->w + 2) * VL;
}

static size_t ring_floats(const pwdw_conv *k) {
    return 3 * GROUP * block_floats(k);
}

static size_t scratchpad_size(const own_kernel *kk) {
    const pwdw_conv *k = (const pwdw_conv *)kk;
    return (size_t)k->threads * ring_floats(k) * sizeof(float);
}

#ifdef PWDW_KERNEL
#define INLINE static inline __attribute__((always_inline))

/* min(max(y, lo), hi), a NaN y passing through (max and min return their
 * second operand when one is NaN). */
INLINE __m512 clamp(__m512 y, __m512 lo, __m512 hi) {
    return _mm512_min_ps(hi, _mm512_max_ps(lo, y));
}

/* Pixels [x, x + P) of input row `row` (block 0, pixel 0 of the row; blocks
 * `plane` floats apart) through the G blocks of weights at wt (row c of
 * the weights: input channel c), into the ring at out (blocks `stride`
 * floats apart, pixel x at column x + 1). P and G are constants where it
 * is called, so that the accumulators stay in registers. */
INLINE void pw_pixels(const pwdw_conv *k, const float *row, size_t plane, const float *wt,
        const float *bias, float *out, size_t stride, int64_t x, int P, int G) {
    __m512 acc[PX][GROUP];
    for (int g = 0; g < G; g++) {
        const __m512 b = _mm512_loadu_ps(bias + g * VL);
        for (int p = 0; p < P; p++) acc[p][g] = b;
    }
    for (int64_t c0 = 0; c0 < k->ic; c0 += VL) {
        const float *in = row + (c0 / VL) * plane + x * VL;
        const int64_t lanes = k->ic - c0 < VL ? k->ic - c0 : VL;
        for (int64_t l = 0; l < lanes; l++) {
            const float *wc = wt + (c0 + l) * k->oc;
            __m512 wv[GROUP];
            for (int g = 0; g < G; g++) wv[g] = _mm512_loadu_ps(wc + g * VL);
            for (int p = 0; p < P; p++) {
                const __m512 a = _mm512_set1_ps(in[p * VL + l]);
                for (int g = 0; g < G; g++) acc[p][g] = _mm512_fmadd_ps(a, wv[g], acc[p][g]);
            }
        }
    }
    /* The bounds made here, not kept in registers through the products. */
    const __m512 lo = _mm512_set1_ps(k->lo[0]), hi = _mm512_set1_ps(k->hi[0]);
    for (int g = 0; g < G; g++)
        for (int p = 0; p < P; p++)
            _mm512_storeu_ps(out + g * stride + (x + p + 1) * VL, clamp(acc[p][g], lo, hi));
}

/* The chunks a row of `width` pixels is split into: as even as can be, each
 * at most `most` pixels (a register block), so that no chunk is short of
 * the accumulators that keep the FMA units busy. */
static int64_t chunks(int64_t width, int64_t most) {
    return (width + most - 1) / most;
}

/* Expanded row r of image img, G blocks of the weights and bias at wt and
 * bias, into the ring row at out. */
INLINE void pw_row(const pwdw_conv *k, const float *img, int64_t r, const float *wt,
        const float *bias, float *out, int G) {
    const size_t plane = (size_t)k->h * k->w * VL, stride = block_floats(k);
    const float *row = img + r * k->w * VL;
    const int64_t n = chunks(k->w, PX);
    for (int64_t i = 0; i < n; i++) {
        const int64_t x = k->w * i / n;
        switch (k->w * (i + 1) / n - x) {
#define PW_CASE(P) \
        case P: pw_pixels(k, row, plane, wt, bias, out, stride, x, P, G); break;
        PW_CASE(1) PW_CASE(2) PW_CASE(3) PW_CASE(4) PW_CASE(5) PW_CASE(6)
        PW_CASE(7) PW_CASE(8) PW_CASE(9) PW_CASE(10) PW_CASE(11) PW_CASE(12)
#undef PW_CASE
        }
    }
}

/* Output pixels [x, x + Q) of one block from the ring rows t (NULL: a
 * padding row); s is the stride. */
INLINE void dw_pixels(const float *const t[3], const __m512 w[TAPS], __m512 bias,
        __m512 lo, __m512 hi, float *out, int64_t x, int Q, int s) {
    __m512 acc[DX];
    for (int q = 0; q < Q; q++) acc[q] = bias;
    for (int r = 0; r < 3; r++) {
        if (!t[r]) continue;
        for (int c = 0; c < 3; c++)
            for (int q = 0; q < Q; q++)
                acc[q] = _mm512_fmadd_ps(w[r * 3 + c],
                        _mm512_loadu_ps(t[r] + ((x + q) * s + c) * VL), acc[q]);
    }
    for (int q = 0; q < Q; q++) _mm512_storeu_ps(out + (x + q) * VL, clamp(acc[q], lo, hi));
}

/* One output row of one block (weights wt: nine taps of 16 channels). */
static void dw_row(const pwdw_conv *k, const float *const t[3], const float *wt,
        const float *bias, float *out) {
    __m512 w[TAPS];
    for (int i = 0; i < TAPS; i++) w[i] = _mm512_loadu_ps(wt + i * VL);
    const __m512 b = _mm512_loadu_ps(bias);
    const __m512 lo = _mm512_set1_ps(k->lo[1]), hi = _mm512_set1_ps(k->hi[1]);
    const int64_t n = chunks(k->ow, DX);
    for (int64_t i = 0; i < n; i++) {
        const int64_t x = k->ow * i / n, q = k->ow * (i + 1) / n - x;
#define DW_CASE(Q) \
        case Q: \
            if (k->stride == 1) dw_pixels(t, w, b, lo, hi, out, x, Q, 1); \
            else dw_pixels(t, w, b, lo, hi, out, x, Q, 2); \
            break;
        switch (q) {
        DW_CASE(1) DW_CASE(2) DW_CASE(3) DW_CASE(4)
        DW_CASE(5) DW_CASE(6) DW_CASE(7) DW_CASE(8)
        }
#undef DW_CASE
    }
}

/* Output rows [y0, y1) of blocks [b0, b0 + G) of one image. */
static void band(const pwdw_conv *k, const float *img, const float *wt, const float *bias,
        const float *dwt, const float *dwb, float *out, int64_t y0, int64_t y1,
        int64_t b0, int G, float *ring) {
    const size_t stride = block_floats(k), row = GROUP * stride;
    for (int i = 0; i < 3 * GROUP; i++) {   /* the zero columns */
        _mm512_storeu_ps(ring + i * stride, _mm512_setzero_ps());
        _mm512_storeu_ps(ring + i * stride + (k->w + 1) * VL, _mm512_setzero_ps());
    }
    int64_t held[3] = {-1, -1, -1};   /* the expanded row in each ring slot */
    for (int64_t y = y0; y < y1; y++) {
        float *t[3];
        for (int r = 0; r < 3; r++) {
            const int64_t iy = y * k->stride - 1 + r;
            t[r] = NULL;
            if (iy < 0 || iy >= k->h) continue;
            t[r] = ring + (iy % 3) * row;
            if (held[iy % 3] == iy) continue;
            if (G == GROUP)
                pw_row(k, img, iy, wt + b0 * VL, bias + b0 * VL, t[r], GROUP);
            else
                pw_row(k, img, iy, wt + b0 * VL, bias + b0 * VL, t[r], 1);
            held[iy % 3] = iy;
        }
        for (int g = 0; g < G; g++) {
            const float *tg[3];
            for (int r = 0; r < 3; r++) tg[r] = t[r] ? t[r] + g * stride : NULL;
            const int64_t b = b0 + g;
            dw_row(k, tg, dwt + b * TAPS * VL, dwb + b * VL,
                    out + (b * k->oh + y) * k->ow * VL);
        }
    }
}
#endif

static dnnl_status_t run(const own_kernel *kk, void *scratch, const dnnl_exec_arg_t *args) {
    const pwdw_conv *k = (const pwdw_conv *)kk;
#ifdef PWDW_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(kk, args, ptr));
    const float *src = ptr[0], *wt = ptr[1], *bias = ptr[2], *dwt = ptr[3], *dwb = ptr[4];
    float *dst = ptr[5];
    const int64_t blocks = k->oc / VL, groups = (blocks + GROUP - 1) / GROUP;
    /* Bands of rows, so that the images' bands split evenly among the threads
     * (each thread then takes whole bands, every group of each), where the
     * rows allow bands of MIN_BAND rows: the groups of a band are unequal
     * where the blocks are odd, and a band's first expanded rows are
     * computed twice. */
    int64_t bands = 1;
    while ((k->n * bands) % k->threads != 0 && k->oh / (bands + 1) >= MIN_BAND) bands++;
    const int64_t tasks = k->n * bands * groups;
    const size_t src_image = (size_t)(k->ic + VL - 1) / VL * VL * k->h * k->w;
    const size_t dst_image = (size_t)k->oc * k->oh * k->ow;
    #pragma omp parallel num_threads(k->threads)
    {
        float *ring = (float *)scratch + omp_get_thread_num() * ring_floats(k);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t n = task / (bands * groups), s = task / groups % bands;
            const int64_t b0 = task % groups * GROUP;
            band(k, src + n * src_image, wt, bias, dwt, dwb, dst + n * dst_image,
                    k->oh * s / bands, k->oh * (s + 1) / bands, b0,
                    blocks - b0 < GROUP ? (int)(blocks - b0) : GROUP, ring);
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
        int64_t stride, const float *lo, const float *hi) {
    PASS(own_kernel_new(kernel, sizeof(pwdw_conv), &PWDW_OPS));
    pwdw_conv *k = (pwdw_conv *)*kernel;
    REQUIRE(pwdw_available() && oc > 0 && oc % VL == 0 && (stride == 1 || stride == 2)
            && src_dims[0] > 0 && src_dims[1] > 0 && src_dims[2] > 0 && src_dims[3] > 0,
            dnnl_unimplemented);
    k->n = src_dims[0];
    k->ic = src_dims[1];
    k->h = src_dims[2];
    k->w = src_dims[3];
    k->oc = oc;
    k->stride = stride;
    k->oh = (k->h - 1) / stride + 1;   /* 3x3, padding 1 */
    k->ow = (k->w - 1) / stride + 1;
    for (int i = 0; i < 2; i++) {
        k->lo[i] = lo[i];
        k->hi[i] = hi[i];
    }
    k->threads = omp_get_max_threads();
    const dnnl_dims_t src = {k->n, k->ic, k->h, k->w}, dst = {k->n, oc, k->oh, k->ow};
    const dnnl_dims_t weights = {k->ic, oc}, channels = {oc}, taps = {oc / VL, TAPS, VL};
    own_kernel *base = &k->base;
    PASS(own_kernel_arg(base, DNNL_ARG_SRC, 4, src, dnnl_f32, dnnl_aBcd16b));
    PASS(own_kernel_arg(base, DNNL_ARG_WEIGHTS, 2, weights, dnnl_f32, dnnl_ab));
    PASS(own_kernel_arg(base, DNNL_ARG_BIAS, 1, channels, dnnl_f32, dnnl_a));
    PASS(own_kernel_arg(base, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, 3, taps, dnnl_f32,
            dnnl_abc));
    PASS(own_kernel_arg(base, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, 1, channels, dnnl_f32,
            dnnl_a));
    PASS(own_kernel_arg(base, DNNL_ARG_DST, 4, dst, dnnl_f32, dnnl_aBcd16b));
    return dnnl_success;
}
