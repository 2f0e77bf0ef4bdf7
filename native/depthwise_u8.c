/* INT8 depthwise 3x3 convolution (see depthwise_u8.h).
 *
 * For each input row the kernel first builds an interleaved copy: for
 * output column w and channel c, the 32-bit lane (x[w-1][c], x[w][c],
 * x[w+1][c], 0), zeros standing for the padding. A row's three taps are
 * then one `vpdpbusd` against the weights' (w0, w1, w2, 0) lane, three per
 * output vector of 16 channels. Each interleaved row serves the three
 * output rows that read it: a thread keeps the last three in a ring.
 * Threads take (image, band of output rows, 16-channel block) tasks, the
 * channel blocks of a band in a row so that its input stays in cache.
 */

#include <omp.h>

#include "oneapi/dnnl/dnnl.h"

#include "minimx_dnnl.h"
#include "shim.h"
#include "own_kernel.h"
#include "depthwise_u8.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define DW8_KERNEL 1
#endif

#define VL 16     /* channels per vector: int32 lanes of one AVX-512 register */
#define LANE 4    /* bytes per interleaved channel: three taps and a zero */

typedef struct {
    own_kernel base;
    int64_t n, c, h, w;   /* output size = input size (stride 1, padding 1) */
    int with_bias, relu, dst_s8;
    int threads;          /* the OpenMP team size the scratchpad is sized for */
} dw8_conv;

int dw8_available(void) {
#ifdef DW8_KERNEL
    return 1;
#else
    return 0;
#endif
}

static size_t ring_bytes(const dw8_conv *dc) {
    return (size_t)3 * dc->w * VL * LANE;
}

static size_t scratchpad_size(const own_kernel *k) {
    const dw8_conv *dc = (const dw8_conv *)k;
    return (size_t)dc->threads * ring_bytes(dc);
}

#ifdef DW8_KERNEL
/* Input row `in` (W pixels of C channels, from channel c0) interleaved into t. */
static void interleave(const uint8_t *in, uint8_t *t, int64_t w, int64_t c) {
    for (int64_t x = 0; x < w; x++) {
        const uint8_t *p = in + x * c;
        __m512i mid = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
        __m512i left = x > 0
                ? _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p - c)))
                : _mm512_setzero_si512();
        __m512i right = x + 1 < w
                ? _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + c)))
                : _mm512_setzero_si512();
        /* left | mid << 8 | right << 16 (0xFE: the OR of three) */
        _mm512_store_si512((__m512i *)(t + x * VL * LANE), _mm512_ternarylogic_epi32(
                left, _mm512_slli_epi32(mid, 8), _mm512_slli_epi32(right, 16), 0xFE));
    }
}

/* One output row of 16 channels from the interleaved rows t[0..2] (NULL:
 * padding), stored every c bytes from out. */
static void output_row(const dw8_conv *dc, const uint8_t *const t[3],
        const __m512i w[3], __m512 bias, __m512 factor, uint8_t *out) {
    const __m512 lo = _mm512_set1_ps(dc->relu ? 0.f : -128.f), hi = _mm512_set1_ps(127.f);
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t x = 0; x < dc->w; x++) {
        __m512i acc = _mm512_setzero_si512();
        for (int k = 0; k < 3; k++)
            if (t[k]) acc = _mm512_dpbusd_epi32(acc,
                    _mm512_load_si512((const __m512i *)(t[k] + x * VL * LANE)), w[k]);
        /* The numpy kernel's float32 steps, then saturation before rounding:
         * the same integers as rounding first, the bounds being integers.
         * Rounding turns what int32 cannot hold into INT32_MIN, which the
         * narrowing saturates as it should below (-inf, s8) and, read unsigned,
         * above (+inf, u8): s8 is clamped to [lo, 127] first, u8 (relu or not)
         * needs only max(y, 0). */
        __m512 y = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc), bias), factor);
        __m128i bytes = dc->dst_s8
                ? _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(
                        _mm512_min_ps(_mm512_max_ps(y, lo), hi)))
                : _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_max_ps(y, zero)));
        _mm_storeu_si128((__m128i *)(out + x * dc->c), bytes);
    }
}

/* Output rows [y0, y1) of image `img`, channels [c0, c0 + 16). */
static void band(const dw8_conv *dc, const uint8_t *img, const int8_t *weights,
        const float *bias, const float *factor, uint8_t *out, int64_t y0,
        int64_t y1, int64_t c0, uint8_t *ring) {
    const size_t row = (size_t)dc->w * VL * LANE;
    __m512i w[3];
    for (int k = 0; k < 3; k++)
        w[k] = _mm512_loadu_si512(weights + (k * dc->c + c0) * LANE);
    const __m512 b = bias ? _mm512_loadu_ps(bias + c0) : _mm512_setzero_ps();
    const __m512 f = _mm512_loadu_ps(factor + c0);
    int64_t held[3] = {-1, -1, -1};   /* the input row in each ring slot */
    for (int64_t y = y0; y < y1; y++) {
        const uint8_t *t[3];
        for (int k = 0; k < 3; k++) {
            const int64_t r = y - 1 + k;
            t[k] = NULL;
            if (r < 0 || r >= dc->h) continue;
            uint8_t *slot = ring + (r % 3) * row;
            if (held[r % 3] != r) {
                interleave(img + (r * dc->w * dc->c + c0), slot, dc->w, dc->c);
                held[r % 3] = r;
            }
            t[k] = slot;
        }
        output_row(dc, t, w, b, f, out + (y * dc->w * dc->c + c0));
    }
}
#endif

static dnnl_status_t run(const own_kernel *k, void *scratch,
        const dnnl_exec_arg_t *args) {
    const dw8_conv *dc = (const dw8_conv *)k;
#ifdef DW8_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(k, args, ptr));
    const int b = dc->with_bias;   /* the bias's place shifts what follows */
    const uint8_t *src = ptr[0];
    const int8_t *weights = ptr[1];
    const float *bias = b ? ptr[2] : NULL, *factor = ptr[2 + b];
    uint8_t *dst = ptr[3 + b];
    /* Bands of rows: enough for every thread, each at least four rows. */
    int64_t bands = 1;
    while (dc->n * bands < dc->threads && bands * 8 <= dc->h) bands *= 2;
    const int64_t blocks = dc->c / VL, tasks = dc->n * bands * blocks;
    const size_t image = (size_t)dc->h * dc->w * dc->c;
    #pragma omp parallel num_threads(dc->threads)
    {
        uint8_t *ring = (uint8_t *)scratch + omp_get_thread_num() * ring_bytes(dc);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t n = task / (bands * blocks), s = task / blocks % bands;
            band(dc, src + n * image, weights, bias, factor, dst + n * image,
                    dc->h * s / bands, dc->h * (s + 1) / bands, task % blocks * VL, ring);
        }
    }
    return dnnl_success;
#else
    (void)dc; (void)scratch; (void)args;
    return mmx_fail(dnnl_unimplemented, "dw8_conv run: built without AVX512-VNNI");
#endif
}

static const own_kernel_ops DW8_OPS = {"dw8_u8:avx512_core_vnni", scratchpad_size, run};

dnnl_status_t dw8_conv_create(own_kernel **kernel, const int64_t *src_dims,
        int with_bias, int relu, int dst_s8) {
    PASS(own_kernel_new(kernel, sizeof(dw8_conv), &DW8_OPS));
    dw8_conv *dc = (dw8_conv *)*kernel;
    REQUIRE(dw8_available() && src_dims[1] % VL == 0, dnnl_unimplemented);
    dc->n = src_dims[0];
    dc->c = src_dims[1];
    dc->h = src_dims[2];
    dc->w = src_dims[3];
    dc->with_bias = with_bias;
    dc->relu = relu;
    dc->dst_s8 = dst_s8;
    dc->threads = omp_get_max_threads();
    const dnnl_dims_t data = {dc->n, dc->c, dc->h, dc->w};
    const dnnl_dims_t weights = {3, dc->c, LANE}, channels = {dc->c};
    const dnnl_dims_t factor = {1, dc->c, 1, 1};
    own_kernel *k = &dc->base;
    PASS(own_kernel_arg(k, DNNL_ARG_SRC, 4, data, dnnl_u8, dnnl_acdb));
    PASS(own_kernel_arg(k, DNNL_ARG_WEIGHTS, 3, weights, dnnl_s8, dnnl_abc));
    if (with_bias) PASS(own_kernel_arg(k, DNNL_ARG_BIAS, 1, channels, dnnl_f32, dnnl_a));
    PASS(own_kernel_arg(k, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, 4, factor,
            dnnl_f32, dnnl_acdb));
    PASS(own_kernel_arg(k, DNNL_ARG_DST, 4, data, dst_s8 ? dnnl_s8 : dnnl_u8, dnnl_acdb));
    return dnnl_success;
}
