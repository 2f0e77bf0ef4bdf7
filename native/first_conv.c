/* A CNN's first convolution, quantized on the way out (see first_conv.h). */

#include <math.h>
#include <omp.h>

#include "oneapi/dnnl/dnnl.h"

#include "shim.h"
#include "own_kernel.h"
#include "first_conv.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#define FIRST_CONV_KERNEL 1
#endif

#define VL 16      /* output channels per vector of float32 */
#define STRIP 8    /* output pixels a strip keeps in registers */
#define TAPS 27    /* 3 channels x 3 x 3 */
#define AHEAD 4    /* output rows ahead that prefetch_rows asks for */

typedef struct {
    own_kernel base;
    int64_t n, h, w, oc, oh, ow;
    float lo, hi, scale;
    int dst_s8;
} first_conv;

int first_conv_available(void) {
#ifdef FIRST_CONV_KERNEL
    return 1;
#else
    return 0;
#endif
}

#ifdef FIRST_CONV_KERNEL
/* min(max(y, lo), hi) * scale, then saturated to the dst type (before
 * rounding: the same integers, the bounds being integers), is
 * min(max(y * scale, *lo), *hi) for these: rounding keeps the order of
 * products by the same positive scale, so y < lo exactly where y * scale <
 * lo * scale, each as float32 rounds them. A zero scale (a zero range) gives
 * zeros, as it does (an infinite bound times zero would not). */
static void bounds(const first_conv *fc, float *lo, float *hi) {
    const float qlo = fc->dst_s8 ? -128.f : 0.f, qhi = fc->dst_s8 ? 127.f : 255.f;
    const float slo = fc->scale > 0.f ? fc->lo * fc->scale : 0.f;
    const float shi = fc->scale > 0.f ? fc->hi * fc->scale : 0.f;
    *lo = slo > qlo ? slo : qlo;
    *hi = shi < qhi ? shi : qhi;
}

typedef struct {
    __m512 scale, lo, hi;   /* the bounds after scaling (see bounds) */
    int s8;
    int nan_high;           /* NaN saturates to hi (else to lo): see run */
} epilogue;

/* 16 channels of one output pixel, stored as bytes at out. max_ps and min_ps
 * return their second operand where one is NaN: NaN leaves max(y, lo) as lo,
 * and max(lo, y) as NaN, which min(., hi) makes hi. */
static inline void finish(const epilogue *e, __m512 acc, uint8_t *out) {
    const __m512 y = _mm512_mul_ps(acc, e->scale);
    const __m512 low = e->nan_high ? _mm512_max_ps(e->lo, y) : _mm512_max_ps(y, e->lo);
    const __m512i q = _mm512_cvtps_epi32(_mm512_min_ps(low, e->hi));
    _mm_storeu_si128((__m128i *)out, e->s8 ? _mm512_cvtsepi32_epi8(q)
                                           : _mm512_cvtusepi32_epi8(q));
}

/* Output pixel (oy, ox), all channels, the taps inside the image only (a tap in
 * the padding would add zero). */
static void pixel(const first_conv *fc, const epilogue *e, const float *img,
        const float *wt, const float *bias, int64_t oy, int64_t ox, uint8_t *out) {
    for (int64_t c = 0; c < fc->oc; c += VL) {
        __m512 acc = _mm512_loadu_ps(bias + c);
        for (int ci = 0; ci < 3; ci++)
            for (int ky = 0; ky < 3; ky++) {
                const int64_t iy = 2 * oy - 1 + ky;
                if (iy < 0 || iy >= fc->h) continue;
                for (int kx = 0; kx < 3; kx++) {
                    const int64_t ix = 2 * ox - 1 + kx;
                    if (ix < 0 || ix >= fc->w) continue;
                    acc = _mm512_fmadd_ps(
                            _mm512_loadu_ps(wt + ((ci * 3 + ky) * 3 + kx) * fc->oc + c),
                            _mm512_set1_ps(img[(ci * fc->h + iy) * fc->w + ix]), acc);
                }
            }
        finish(e, acc, out + c);
    }
}

/* STRIP output pixels from ox (all their columns inside the image), nv (1 or
 * 2, a constant where it is inlined: the accumulators stay in registers)
 * vectors of channels from c. */
static inline __attribute__((always_inline)) void strip(const first_conv *fc,
        const epilogue *e, const float *img, const float *wt, const float *bias,
        int64_t oy, int64_t ox, int64_t c, const int nv, uint8_t *out) {
    __m512 acc[2][STRIP];
#pragma GCC unroll 2
    for (int v = 0; v < nv; v++)
#pragma GCC unroll 8
        for (int p = 0; p < STRIP; p++) acc[v][p] = _mm512_loadu_ps(bias + c + v * VL);
    for (int ci = 0; ci < 3; ci++)
        for (int ky = 0; ky < 3; ky++) {
            const int64_t iy = 2 * oy - 1 + ky;
            if (iy < 0 || iy >= fc->h) continue;
            const float *x = img + (ci * fc->h + iy) * fc->w + 2 * ox - 1;
            const float *w = wt + (ci * 3 + ky) * 3 * fc->oc + c;
#pragma GCC unroll 3
            for (int kx = 0; kx < 3; kx++)
#pragma GCC unroll 2
                for (int v = 0; v < nv; v++) {
                    const __m512 wv = _mm512_loadu_ps(w + kx * fc->oc + v * VL);
#pragma GCC unroll 8
                    for (int p = 0; p < STRIP; p++)
                        acc[v][p] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[2 * p + kx]), acc[v][p]);
                }
        }
#pragma GCC unroll 8
    for (int p = 0; p < STRIP; p++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) finish(e, acc[v][p], out + p * fc->oc + c + v * VL);
}

/* STRIP output pixels from ox, all channels. */
static void strips(const first_conv *fc, const epilogue *e, const float *img,
        const float *wt, const float *bias, int64_t oy, int64_t ox, uint8_t *out) {
    int64_t c = 0;
    for (; c + 2 * VL <= fc->oc; c += 2 * VL)
        strip(fc, e, img, wt, bias, oy, ox, c, 2, out + ox * fc->oc);
    if (c < fc->oc) strip(fc, e, img, wt, bias, oy, ox, c, 1, out + ox * fc->oc);
}

/* Asks for the two input rows of each plane that output row oy + AHEAD reads
 * first: an image read from memory, not cache, arrives in time (nine rows
 * read two at a time outrun the hardware's prefetching: MobileNet v1's first
 * layer at batch 16 took 2.2-2.9 ms without this, against 1.7 for oneDNN's
 * reorder, convolution and quantizing steps; AMD Zen 5, the plan's profile,
 * separate runs, not alternated). */
static void prefetch_rows(const first_conv *fc, const float *img, int64_t oy) {
    for (int64_t iy = 2 * (oy + AHEAD); iy <= 2 * (oy + AHEAD) + 1 && iy < fc->h; iy++)
        for (int c = 0; c < 3; c++) {
            const char *line = (const char *)(img + (c * fc->h + iy) * fc->w);
            for (int64_t b = 0; b < fc->w * (int64_t)sizeof(float); b += 64)
                _mm_prefetch(line + b, _MM_HINT_T0);
        }
}

/* Output row oy of one image. */
static void row(const first_conv *fc, const epilogue *e, const float *img, const float *wt,
        const float *bias, int64_t oy, uint8_t *out) {
    prefetch_rows(fc, img, oy);
    /* Strips cover ox in [1, inside): from 1 (0 reads the left padding) to
     * where 2 * ox + 1 stays inside the row, the last one overlapping the one
     * before (its pixels computed twice, the same way) so that none is left. */
    const int64_t inside = (fc->w - 2) / 2 + 1;
    int64_t ox = 0;
    for (; ox < 1 && ox < fc->ow; ox++) pixel(fc, e, img, wt, bias, oy, ox, out + ox * fc->oc);
    if (inside - 1 >= STRIP) {
        for (; ox + STRIP <= inside; ox += STRIP) strips(fc, e, img, wt, bias, oy, ox, out);
        if (ox < inside) strips(fc, e, img, wt, bias, oy, inside - STRIP, out);
        ox = inside;
    }
    for (; ox < fc->ow; ox++) pixel(fc, e, img, wt, bias, oy, ox, out + ox * fc->oc);
}
#endif

static dnnl_status_t run(const own_kernel *k, void *scratch, const dnnl_exec_arg_t *args) {
    (void)scratch;
    const first_conv *fc = (const first_conv *)k;
#ifdef FIRST_CONV_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(k, args, ptr));
    const float *src = ptr[0], *wt = ptr[1], *bias = ptr[2];
    uint8_t *dst = ptr[3];
    float lo, hi;
    bounds(fc, &lo, &hi);
    /* NaN becomes the activation's lower bound (relu, clip), as on the numpy
     * path; without an activation, quantizing it gives 127 in int8 and 0 in
     * uint8, as MXNet's quantize_v2 and oneDNN's saturation do. */
    const int unbounded = fc->lo == -INFINITY && fc->hi == INFINITY;
    const epilogue e = {_mm512_set1_ps(fc->scale), _mm512_set1_ps(lo), _mm512_set1_ps(hi),
            fc->dst_s8, unbounded && fc->dst_s8};
    const int64_t rows = fc->n * fc->oh;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t n = r / fc->oh, oy = r % fc->oh;
        row(fc, &e, src + n * 3 * fc->h * fc->w, wt, bias, oy, dst + r * fc->ow * fc->oc);
    }
    return dnnl_success;
#else
    (void)fc; (void)args;
    return mmx_fail(dnnl_unimplemented, "first_conv run: built without AVX-512");
#endif
}

static const own_kernel_ops FIRST_CONV_OPS = {"first_conv_q:avx512_core", NULL, run};

dnnl_status_t first_conv_create(own_kernel **kernel, const int64_t *src_dims, int64_t oc,
        float lo, float hi, float scale, int dst_s8) {
    PASS(own_kernel_new(kernel, sizeof(first_conv), &FIRST_CONV_OPS));
    first_conv *fc = (first_conv *)*kernel;
    REQUIRE(first_conv_available() && src_dims[1] == 3 && oc > 0 && oc % VL == 0,
            dnnl_unimplemented);
    fc->n = src_dims[0];
    fc->h = src_dims[2];
    fc->w = src_dims[3];
    fc->oc = oc;
    fc->oh = (fc->h - 1) / 2 + 1;
    fc->ow = (fc->w - 1) / 2 + 1;
    fc->lo = lo;
    fc->hi = hi;
    fc->scale = scale;
    fc->dst_s8 = dst_s8;
    const dnnl_dims_t weights = {TAPS, oc}, channels = {oc};
    const dnnl_dims_t out = {fc->n, oc, fc->oh, fc->ow};
    own_kernel *k = &fc->base;
    PASS(own_kernel_arg(k, DNNL_ARG_SRC, 4, src_dims, dnnl_f32, dnnl_abcd));
    PASS(own_kernel_arg(k, DNNL_ARG_WEIGHTS, 2, weights, dnnl_f32, dnnl_ab));
    PASS(own_kernel_arg(k, DNNL_ARG_BIAS, 1, channels, dnnl_f32, dnnl_a));
    PASS(own_kernel_arg(k, DNNL_ARG_DST, 4, out, dst_s8 ? dnnl_s8 : dnnl_u8, dnnl_acdb));
    return dnnl_success;
}
