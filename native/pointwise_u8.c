/* INT8 1x1 convolution of few input channels (see pointwise_u8.h).
 *
 * The pixels of the whole batch are one row of P pixels of K bytes (NHWC,
 * stride 1): threads take tiles of PIX pixels, and a tile goes through the
 * output channels a group of 64 at a time (then a vector at a time for the
 * last channels of fewer than 64), its pixels' bytes staying in L1. Of a
 * group, each of the K / 4 weight vectors of its four channel vectors is
 * loaded once and multiplies every pixel's four input bytes, broadcast.
 * s8 data are read as u8 with 128 added (the sign bits of a tile's bytes
 * flipped once, into a buffer), each sum starting at -128 times its
 * weights' sum, as oneDNN's kernels do on VNNI.
 * Where float32 would add the bias exactly, the sums start at it too and
 * the epilogue skips that addition, one of the six operations it spends
 * on each vector of outputs (against one to eight `vpdpbusd`).
 */

#include <math.h>
#include <omp.h>
#include <string.h>

#include "oneapi/dnnl/dnnl.h"

#include "minimx_dnnl.h"
#include "shim.h"
#include "own_kernel.h"
#include "pointwise_u8.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define PW8_KERNEL 1
#endif

#define VL 16            /* output channels a vector: int32 lanes */
#define GROUP 4          /* vectors the packs narrow to one store of 64 bytes */
#define PIX 4            /* pixels a tile (16 accumulators for a group) */

typedef struct {
    own_kernel base;
    int64_t pixels, k, oc;
    int src_s8, with_bias, relu, dst_s8;
} pw8_conv;

int pw8_available(void) {
#ifdef PW8_KERNEL
    return 1;
#else
    return 0;
#endif
}

#ifdef PW8_KERNEL
typedef struct {
    const int8_t *weights;
    const int32_t *start;         /* where each slot's sums start (see starts) */
    const float *bias, *factor;   /* a zero bias where the layer has none */
    __m512i flip;                 /* the sign bits xor-ed into the data: s8 read as u8 */
    __m512 hi, lo;                /* the dst type's top; its bottom, or 0 with relu, in s8 */
} consts;

/* A vector of sums requantized to int32: rounded, at most the top, and
 * below the bottom only where the saturating narrowing lifts it. A NaN y
 * (an infinite factor times a zero sum) goes where the numpy kernel's
 * `saturate` puts it: to the top in s8, min taking its second operand, and
 * to 0 in u8, kept by min and converted to INT32_MIN. */
static inline __attribute__((always_inline)) __m512i requantized(const consts *c, __m512i acc,
        int64_t ch, const int dst_s8, const int folded) {
    __m512 y = _mm512_cvtepi32_ps(acc);
    if (!folded) y = _mm512_add_ps(y, _mm512_loadu_ps(c->bias + ch));
    y = _mm512_mul_ps(y, _mm512_loadu_ps(c->factor + ch));
    y = dst_s8 ? _mm512_max_ps(_mm512_min_ps(y, c->hi), c->lo) : _mm512_min_ps(c->hi, y);
    return _mm512_cvtps_epi32(y);
}

static inline __attribute__((always_inline)) __m512i broadcast4(const uint8_t *p) {
    int32_t four;
    memcpy(&four, p, sizeof(four));
    return _mm512_set1_epi32(four);
}

/* The PIX pixels at src (K bytes each, kg lanes of four) times `vecs`
 * vectors of output channels from ch, into acc. */
static inline __attribute__((always_inline)) void sums(const pw8_conv *pc, const consts *c,
        const uint8_t *src, int64_t ch, const int kg, const int vecs,
        __m512i acc[PIX][GROUP]) {
    for (int v = 0; v < vecs; v++) {
        const __m512i start = _mm512_loadu_si512(c->start + ch + v * VL);
        for (int p = 0; p < PIX; p++) acc[p][v] = start;
    }
    for (int g = 0; g < kg; g++) {
        __m512i w[GROUP];
        for (int v = 0; v < vecs; v++)
            w[v] = _mm512_loadu_si512(c->weights + (g * pc->oc + ch + v * VL) * 4);
        for (int p = 0; p < PIX; p++) {
            const __m512i x = broadcast4(src + p * pc->k + 4 * g);
            for (int v = 0; v < vecs; v++) acc[p][v] = _mm512_dpbusd_epi32(acc[p][v], x, w[v]);
        }
    }
}

/* The `vecs` vectors of channels from ch that end a tile's pixels, each
 * narrowed alone. */
static inline __attribute__((always_inline)) void tail(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, int64_t ch, const int kg, const int vecs,
        const int dst_s8, const int folded, __m512i acc[PIX][GROUP]) {
    sums(pc, c, src, ch, kg, vecs, acc);
    for (int p = 0; p < PIX; p++)
        for (int v = 0; v < vecs; v++) {
            const __m512i q = requantized(c, acc[p][v], ch + v * VL, dst_s8, folded);
            _mm_storeu_si128((__m128i *)(dst + p * pc->oc + ch + v * VL), dst_s8
                    ? _mm512_cvtsepi32_epi8(q)
                    : _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, _mm512_setzero_si512())));
        }
}

/* The tile's PIX * K input bytes (at most 128) of s8 data read as u8:
 * copied to `in` with the sign bits flipped, once a tile rather than at
 * each broadcast of each pass over its channels. Whole vectors are stored
 * (a masked store would keep the broadcasts from reading it until it
 * retires); the bytes past the tile's are never read. */
static inline __attribute__((always_inline)) void tile_input(const consts *c,
        const uint8_t *src, int64_t bytes, uint8_t *in) {
    for (int64_t at = 0; at < bytes; at += 64) {
        const int64_t left = bytes - at;
        const __mmask64 m = left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
        _mm512_store_si512(in + at, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + at),
                                                     c->flip));
    }
}

/* One tile: PIX pixels from src, their outputs at dst. */
static inline __attribute__((always_inline)) void tile(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, const int kg, const int dst_s8, const int folded) {
    uint8_t in[PIX * PW8_MAX_K] __attribute__((aligned(64)));
    if (pc->src_s8) {
        tile_input(c, src, PIX * pc->k, in);
        src = in;
    }
    __m512i acc[PIX][GROUP];
    const int64_t whole = pc->oc / (GROUP * VL) * (GROUP * VL);
    for (int64_t ch = 0; ch < whole; ch += GROUP * VL) {
        sums(pc, c, src, ch, kg, GROUP, acc);
        for (int p = 0; p < PIX; p++) {
            __m512i q[GROUP];
            for (int v = 0; v < GROUP; v++)
                q[v] = requantized(c, acc[p][v], ch + v * VL, dst_s8, folded);
            const __m512i words0 = _mm512_packs_epi32(q[0], q[1]);
            const __m512i words1 = _mm512_packs_epi32(q[2], q[3]);
            _mm512_storeu_si512(dst + p * pc->oc + ch, dst_s8
                    ? _mm512_packs_epi16(words0, words1) : _mm512_packus_epi16(words0, words1));
        }
    }
    switch ((pc->oc - whole) / VL) {   /* the last channels, in natural order */
    case 1: tail(pc, c, src, dst, whole, kg, 1, dst_s8, folded, acc); break;
    case 2: tail(pc, c, src, dst, whole, kg, 2, dst_s8, folded, acc); break;
    case 3: tail(pc, c, src, dst, whole, kg, 3, dst_s8, folded, acc); break;
    default: break;
    }
}

/* Tiles [t0, t1), the input lanes, the dst type and the bias's place
 * constants where inlined. */
static inline __attribute__((always_inline)) void tiles(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, int64_t t0, int64_t t1, const int kg,
        const int dst_s8, const int folded) {
    for (int64_t t = t0; t < t1; t++) {
        /* The last tile ends at the last pixel, overlapping the one before
         * where PIX does not divide the pixels: those are computed twice,
         * the same way. */
        const int64_t p = t * PIX + PIX <= pc->pixels ? t * PIX : pc->pixels - PIX;
        tile(pc, c, src + p * pc->k, dst + p * pc->oc, kg, dst_s8, folded);
    }
}

#define TILES(kg) (pc->dst_s8 ? (folded ? tiles(pc, c, src, dst, t0, t1, kg, 1, 1)     \
                                       : tiles(pc, c, src, dst, t0, t1, kg, 1, 0))    \
                              : (folded ? tiles(pc, c, src, dst, t0, t1, kg, 0, 1)     \
                                        : tiles(pc, c, src, dst, t0, t1, kg, 0, 0)))

static void run_tiles(const pw8_conv *pc, const consts *c, const uint8_t *src, uint8_t *dst,
        int64_t t0, int64_t t1, int folded) {
    switch (pc->k / 4) {
    case 1: TILES(1); break;
    case 2: TILES(2); break;
    case 3: TILES(3); break;
    case 4: TILES(4); break;
    case 5: TILES(5); break;
    case 6: TILES(6); break;
    case 7: TILES(7); break;
    default: TILES(8); break;
    }
}
#endif

/* The scratchpad: where each slot's sums start (oc int32), then a zero
 * bias (oc float). */
static size_t scratchpad_size(const own_kernel *k) {
    const pw8_conv *pc = (const pw8_conv *)k;
    return (size_t)pc->oc * (sizeof(int32_t) + sizeof(float));
}

#ifdef PW8_KERNEL
/* Where each slot's sums start: 0 for u8 data; for s8 data, read as u8
 * (x + 128), -128 times the slot's weights' sum. Where every bias is small
 * enough that float(acc) + float(bias) and float(acc + bias) are the same
 * float32 (both terms and the sum below 2^24, integers all), the bias is
 * added there too, and the kernel skips its float addition: returns 1. Computed at each run (a
 * few hundred instructions, against the layer's tens of thousands): the
 * weights and bias are the plan's arguments, and may change between runs. */
static int starts(const pw8_conv *pc, const int8_t *weights, const float *bias, int32_t *start) {
    const __m512i x128 = _mm512_set1_epi8((char)0x80);
    for (int64_t ch = 0; ch < pc->oc; ch += VL) {
        __m512i sum = _mm512_setzero_si512();
        for (int64_t g = 0; pc->src_s8 && g < pc->k / 4; g++)
            sum = _mm512_dpbusd_epi32(sum, x128,
                    _mm512_loadu_si512(weights + (g * pc->oc + ch) * 4));
        _mm512_storeu_si512(start + ch, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    }
    const float most = (float)((1 << 24) - pc->k * 255 * 128);   /* |bias| and |acc| */
    for (int64_t ch = 0; ch < pc->oc; ch++)
        if (!(fabsf(bias[ch]) <= most)) return 0;   /* NaN too */
    for (int64_t ch = 0; ch < pc->oc; ch++) start[ch] += (int32_t)bias[ch];
    return 1;
}
#endif

static dnnl_status_t run(const own_kernel *k, void *scratch, const dnnl_exec_arg_t *args) {
    const pw8_conv *pc = (const pw8_conv *)k;
#ifdef PW8_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(k, args, ptr));
    const int b = pc->with_bias;   /* the bias's place shifts what follows */
    int32_t *start = scratch;
    float *zero_bias = (float *)(start + pc->oc);
    if (!b) memset(zero_bias, 0, pc->oc * sizeof(float));
    const float *bias = b ? ptr[2] : zero_bias;
    const int folded = starts(pc, ptr[1], bias, start);
    const consts c = {ptr[1], start, bias, ptr[2 + b],
                      _mm512_set1_epi8(pc->src_s8 ? (char)0x80 : 0),
                      _mm512_set1_ps(pc->dst_s8 ? 127.f : 255.f),
                      _mm512_set1_ps(pc->relu ? 0.f : -128.f)};
    const uint8_t *src = ptr[0];
    uint8_t *dst = ptr[3 + b];
    const int64_t ntiles = (pc->pixels + PIX - 1) / PIX;
    #pragma omp parallel
    {
        /* Contiguous runs of tiles, one a thread. */
        const int64_t n = omp_get_num_threads(), i = omp_get_thread_num();
        run_tiles(pc, &c, src, dst, ntiles * i / n, ntiles * (i + 1) / n, folded);
    }
    return dnnl_success;
#else
    (void)args;
    (void)pc;
    (void)scratch;
    return mmx_fail(dnnl_unimplemented, "pw8_conv run: built without AVX512-VNNI");
#endif
}

static const own_kernel_ops PW8_OPS = {"pw8_u8:avx512_core_vnni", scratchpad_size, run};

dnnl_status_t pw8_conv_create(own_kernel **kernel, const int64_t *src_dims, int src_s8,
        int64_t oc, int with_bias, int relu, int dst_s8) {
    PASS(own_kernel_new(kernel, sizeof(pw8_conv), &PW8_OPS));
    pw8_conv *pc = (pw8_conv *)*kernel;
    const int64_t k = src_dims[1];
    pc->pixels = src_dims[0] * src_dims[2] * src_dims[3];
    REQUIRE(pw8_available() && k > 0 && k % 4 == 0 && k <= PW8_MAX_K && oc > 0
            && oc % VL == 0 && pc->pixels >= PIX, dnnl_unimplemented);
    pc->k = k;
    pc->oc = oc;
    pc->src_s8 = src_s8;
    pc->with_bias = with_bias;
    pc->relu = relu;
    pc->dst_s8 = dst_s8;
    const dnnl_dims_t src = {src_dims[0], k, src_dims[2], src_dims[3]};
    const dnnl_dims_t dst = {src_dims[0], oc, src_dims[2], src_dims[3]};
    const dnnl_dims_t weights = {k / 4, oc, 4};
    own_kernel *kern = &pc->base;
    PASS(own_kernel_arg(kern, DNNL_ARG_SRC, 4, src, src_s8 ? dnnl_s8 : dnnl_u8, dnnl_acdb));
    PASS(own_kernel_arg(kern, DNNL_ARG_WEIGHTS, 3, weights, dnnl_s8, dnnl_abc));
    return own_kernel_requantized_args(kern, dst, with_bias, dst_s8);
}
