/* INT8 depthwise 3x3 convolution (see depthwise_u8.h).
 *
 * For each input row the kernel first builds an interleaved copy: for
 * output column x and channel c, the 32-bit lane (in[s*x-1][c], in[s*x][c],
 * in[s*x+1][c], 0) for stride s, zeros standing for the padding. A row's
 * three taps are then one `vpdpbusd` against the weights' (w0, w1, w2, 0)
 * lane. A block takes 64 bytes of a row at once: 64 channels of a pixel
 * (at stride 1 masked where a last block has fewer) or two pixels of 32
 * or four of 16: of a tensor of as many channels, or of a last block of 32
 * or 16 after blocks of 64 (MobileNet v2's 144), whose pixels' bytes are
 * loaded and stored apart. Byte and word unpacks of the three taps' bytes
 * give four vectors of lanes, in the unpacks' order (unpacked_place), which
 * the saturating packs of the four results undo. Each interleaved row serves
 * the output rows that read it (three at stride 1, two at stride 2): a
 * thread keeps the last three in a ring. Threads take (image, band of
 * output rows, channel block) tasks, the channel blocks of a band in a row
 * so that its input stays in cache. Where float32 would add a block's bias
 * exactly, its sums start at the bias and the epilogue skips the addition.
 */

#include <math.h>
#include <omp.h>
#include <string.h>

#include "oneapi/dnnl/dnnl.h"

#include "minimx_dnnl.h"
#include "shim.h"
#include "own_kernel.h"
#include "depthwise_u8.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define DW8_KERNEL 1
#endif

#define VL 16          /* channels per vector: int32 lanes of one AVX-512 register */
#define LANE 4         /* bytes per interleaved channel: three taps and a zero */
#define CB 64          /* bytes a block takes of a row at once */
#define VECS (CB / VL) /* vectors per interleaved group */

typedef struct {
    own_kernel base;
    int64_t n, c, ih, iw, oh, ow, stride;
    int64_t pix;          /* a block takes `pix` pixels of 64 / pix bytes at once
                             (1 x 64 channels, or 2 x 32 or 4 x 16) */
    int64_t groups;       /* such groups of output pixels in a row (the most) */
    int64_t tail_pix;     /* the pixels the last block takes at once: 2 or 4
                             where more than 64 channels end in a block of 32
                             or 16 at stride 1 (pix elsewhere) */
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
    return (size_t)3 * dc->groups * CB * LANE;
}

static size_t scratchpad_size(const own_kernel *k) {
    const dw8_conv *dc = (const dw8_conv *)k;
    return (size_t)dc->threads * ring_bytes(dc);
}

#ifdef DW8_KERNEL
/* The place in a block of lane j of interleaved vector v: the unpacks work
 * within 128-bit lanes, each holding 16 of the block's bytes. */
static int unpacked_place(int v, int j) {
    return VL * (j / LANE) + LANE * v + j % LANE;
}

/* Bits [a, b) of a byte mask, 0 <= a < b <= 64. */
static __mmask64 bits(int64_t a, int64_t b) {
    const __mmask64 below = b >= CB ? ~(__mmask64)0 : ((__mmask64)1 << b) - 1;
    return below & ~(((__mmask64)1 << a) - 1);
}

/* The bytes of the group of `pix` pixels of `width` bytes from pixel `first`
 * that lie inside a row of w pixels, within the block's channels. */
static inline __mmask64 inside(int64_t first, int64_t pix, int64_t width, int64_t w,
        __mmask64 channels) {
    if (first >= 0 && first + pix <= w) return channels;
    const int64_t lo = first < 0 ? -first : 0, hi = w - first < pix ? w - first : pix;
    return hi > lo ? channels & bits(lo * width, hi * width) : 0;
}

typedef struct {              /* a block's constants, in the unpacks' order */
    __m512i w[3][VECS];
    __m512i start[VECS];      /* where the sums start: the bias where folded, else 0 */
    int folded;               /* the bias is in start: no float addition */
    __m512 bias[VECS], factor[VECS];
    __m512 lo, hi;            /* the dst type's bounds (lo 0 where relu) */
    __mmask64 channels;       /* the block's bytes of a pixel (all, for groups) */
    int64_t pix, width, groups;   /* pixels at once, bytes of each, groups a row */
} block;

/* Pixels [x, x + pix) of a row whose pixels lie c bytes apart, `width`
 * bytes of each (the block's), as one vector, zero outside the row: one
 * load where they are contiguous, else a masked load a pixel, its address
 * moved back so that the pixel lands in its place. */
static inline __m512i load_group(const uint8_t *in, int64_t x, int64_t pix, int64_t width,
        int64_t w, int64_t c, __mmask64 channels) {
    if (pix == 1 || c == width)
        return _mm512_maskz_loadu_epi8(inside(x, pix, width, w, channels), in + x * c);
    __m512i v = _mm512_setzero_si512();
    for (int64_t p = 0; p < pix; p++)
        if (x + p >= 0 && x + p < w)
            v = _mm512_mask_loadu_epi8(v, bits(p * width, (p + 1) * width),
                                       in + (x + p) * c - p * width);
    return v;
}

/* The inverse of load_group: v's pixels stored where they lie in the row. */
static inline void store_group(uint8_t *out, int64_t x, int64_t pix, int64_t width, int64_t w,
        int64_t c, __mmask64 channels, __m512i v) {
    if (pix == 1 || c == width) {
        _mm512_mask_storeu_epi8(out + x * c, inside(x, pix, width, w, channels), v);
        return;
    }
    for (int64_t p = 0; p < pix && x + p < w; p++)
        _mm512_mask_storeu_epi8(out + (x + p) * c - p * width, bits(p * width, (p + 1) * width),
                                v);
}

/* One interleaved group from its taps' bytes, stored at o. */
static inline __attribute__((always_inline)) void store_interleaved(__m512i left,
        __m512i mid, __m512i right, __m512i *o) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i lm_lo = _mm512_unpacklo_epi8(left, mid), lm_hi = _mm512_unpackhi_epi8(left, mid);
    const __m512i r_lo = _mm512_unpacklo_epi8(right, zero), r_hi = _mm512_unpackhi_epi8(right, zero);
    _mm512_store_si512(o, _mm512_unpacklo_epi16(lm_lo, r_lo));
    _mm512_store_si512(o + 1, _mm512_unpackhi_epi16(lm_lo, r_lo));
    _mm512_store_si512(o + 2, _mm512_unpacklo_epi16(lm_hi, r_hi));
    _mm512_store_si512(o + 3, _mm512_unpackhi_epi16(lm_hi, r_hi));
}

/* Input row `in` (from the block's first channel) interleaved into t at
 * stride 1, for groups of `width`-byte pixels (a constant where inlined): a
 * group's left and right taps are its pixels shifted by one, taken from the
 * groups before and after it. (Sizes are locals: stores through t may alias
 * anything a pointer reaches.) */
static inline __attribute__((always_inline)) void interleave_s1(const dw8_conv *dc,
        const block *b, const uint8_t *in, uint8_t *t, const int width) {
    const int64_t pix = CB / width, w = dc->iw, c = dc->c, groups = b->groups;
    const __mmask64 channels = b->channels;
    const __m512i zero = _mm512_setzero_si512();
    __m512i prev = zero, mid = load_group(in, 0, pix, width, w, c, channels);
    for (int64_t g = 0; g < groups; g++) {
        const int64_t x = (g + 1) * pix;   /* the next group's first pixel */
        const __m512i next = g + 1 < groups ? load_group(in, x, pix, width, w, c, channels)
                                            : zero;
        store_interleaved(width == CB ? prev : _mm512_alignr_epi64(mid, prev, (CB - width) / 8),
                mid, width == CB ? next : _mm512_alignr_epi64(next, mid, width / 8),
                (__m512i *)(t + g * CB * LANE));
        prev = mid;
        mid = next;
    }
}

/* The same at stride 2, one pixel of a whole block a group: output column x
 * reads input pixels 2x-1, 2x and 2x+1, the first being the column before's
 * last. */
static void interleave_s2(const dw8_conv *dc, const uint8_t *in, uint8_t *t) {
    const int64_t w = dc->iw, c = dc->c, groups = dc->groups;
    const __mmask64 channels = ~(__mmask64)0;
    __m512i left = _mm512_setzero_si512();
    for (int64_t g = 0; g < groups; g++) {
        const __m512i mid = _mm512_maskz_loadu_epi8(inside(2 * g, 1, CB, w, channels),
                in + 2 * g * c);
        const __m512i right = _mm512_maskz_loadu_epi8(inside(2 * g + 1, 1, CB, w, channels),
                in + (2 * g + 1) * c);
        store_interleaved(left, mid, right, (__m512i *)(t + g * CB * LANE));
        left = right;
    }
}

static void interleave(const dw8_conv *dc, const block *b, const uint8_t *in, uint8_t *t) {
    if (dc->stride == 2) interleave_s2(dc, in, t);
    else if (b->width == 16) interleave_s1(dc, b, in, t, 16);
    else if (b->width == 32) interleave_s1(dc, b, in, t, 32);
    else interleave_s1(dc, b, in, t, CB);
}


/* One output row of a block from the interleaved rows t[0..2] (NULL:
 * padding), from its first channel at out; `folded` a constant where inlined. */
static inline __attribute__((always_inline)) void output_row_of(const dw8_conv *dc,
        const block *b, const uint8_t *const t[3], uint8_t *out, const int folded) {
    const int64_t pix = b->pix, width = b->width, w = dc->ow, c = dc->c, groups = b->groups;
    const int s8 = dc->dst_s8;
    const block k = *b;   /* in registers, whatever out aliases */
    for (int64_t g = 0; g < groups; g++) {
        __m512i q[VECS];
        for (int v = 0; v < VECS; v++) {
            __m512i acc = k.start[v];
            for (int r = 0; r < 3; r++)
                if (t[r]) acc = _mm512_dpbusd_epi32(acc, _mm512_load_si512(
                        (const __m512i *)(t[r] + (g * VECS + v) * VL * LANE)), k.w[r][v]);
            /* The numpy kernel's float32 steps, then saturation before
             * rounding: the same integers as rounding first, the bounds being
             * integers. A NaN (an infinite factor times a zero sum) goes where
             * the kernel's `saturate` puts it: to the top in s8, to lo (0) in
             * u8, max and min keeping their second operand. */
            const __m512 sum = _mm512_cvtepi32_ps(acc);
            const __m512 y = _mm512_mul_ps(folded ? sum : _mm512_add_ps(sum, k.bias[v]),
                                           k.factor[v]);
            const __m512 low = s8 ? _mm512_max_ps(k.lo, y) : _mm512_max_ps(y, k.lo);
            q[v] = _mm512_cvtps_epi32(_mm512_min_ps(low, k.hi));
        }
        /* In range already: the packs only narrow, and restore the order. */
        const __m512i words0 = _mm512_packs_epi32(q[0], q[1]);
        const __m512i words1 = _mm512_packs_epi32(q[2], q[3]);
        store_group(out, g * pix, pix, width, w, c, k.channels, s8
                ? _mm512_packs_epi16(words0, words1) : _mm512_packus_epi16(words0, words1));
    }
}

static void output_row(const dw8_conv *dc, const block *b, const uint8_t *const t[3],
        uint8_t *out) {
    if (b->folded) output_row_of(dc, b, t, out, 1);
    else output_row_of(dc, b, t, out, 0);
}

/* The constants of the block from channel c0, placed as the unpacks place
 * its bytes (zeros past the last channel). */
static void load_block(const dw8_conv *dc, const int8_t *weights, const float *bias,
        const float *factor, int64_t c0, block *b) {
    b->pix = c0 + CB > dc->c ? dc->tail_pix : dc->pix;   /* the last block's may differ */
    b->width = CB / b->pix;
    b->groups = (dc->ow + b->pix - 1) / b->pix;
    int8_t w[3][VECS][VL * LANE];
    float bs[VECS][VL], fs[VECS][VL];
    for (int v = 0; v < VECS; v++)
        for (int j = 0; j < VL; j++) {
            const int64_t place = unpacked_place(v, j);
            const int64_t ch = c0 + (b->pix > 1 ? place % b->width : place);
            const int in = ch < dc->c;
            for (int k = 0; k < 3; k++) {
                if (in) memcpy(w[k][v] + j * LANE, weights + (k * dc->c + ch) * LANE, LANE);
                else memset(w[k][v] + j * LANE, 0, LANE);
            }
            bs[v][j] = in && bias ? bias[ch] : 0.f;
            fs[v][j] = in ? factor[ch] : 0.f;
        }
    /* Where float32 adds the bias exactly (it, the sum of nine taps and
     * theirs below 2^24, integers all), the sums start at it instead. */
    const float most = (float)((1 << 24) - 9 * 255 * 128);
    b->folded = 1;
    for (int v = 0; v < VECS; v++)
        for (int j = 0; j < VL; j++) b->folded &= fabsf(bs[v][j]) <= most;
    for (int v = 0; v < VECS; v++) {
        for (int k = 0; k < 3; k++) b->w[k][v] = _mm512_loadu_si512(w[k][v]);
        b->bias[v] = _mm512_loadu_ps(bs[v]);
        b->factor[v] = _mm512_loadu_ps(fs[v]);
        b->start[v] = b->folded ? _mm512_cvtps_epi32(b->bias[v]) : _mm512_setzero_si512();
    }
    b->lo = _mm512_set1_ps(dc->relu || !dc->dst_s8 ? 0.f : -128.f);
    b->hi = _mm512_set1_ps(dc->dst_s8 ? 127.f : 255.f);
    b->channels = b->pix > 1 || dc->c - c0 >= CB ? ~(__mmask64)0 : bits(0, dc->c - c0);
}

/* Output rows [y0, y1) of an image (src, dst), the block from channel c0. */
static void band(const dw8_conv *dc, const uint8_t *src, const int8_t *weights,
        const float *bias, const float *factor, uint8_t *dst, int64_t y0,
        int64_t y1, int64_t c0, uint8_t *ring) {
    const size_t row = ring_bytes(dc) / 3;
    block b;
    load_block(dc, weights, bias, factor, c0, &b);
    int64_t held[3] = {-1, -1, -1};   /* the input row in each ring slot */
    for (int64_t y = y0; y < y1; y++) {
        const uint8_t *t[3];
        for (int k = 0; k < 3; k++) {
            const int64_t r = dc->stride * y - 1 + k;
            t[k] = NULL;
            if (r < 0 || r >= dc->ih) continue;
            uint8_t *slot = ring + (r % 3) * row;
            if (held[r % 3] != r) {
                interleave(dc, &b, src + (r * dc->iw * dc->c + c0), slot);
                held[r % 3] = r;
            }
            t[k] = slot;
        }
        output_row(dc, &b, t, dst + (y * dc->ow * dc->c + c0));
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
    /* Bands of rows: four tasks for every thread, each band at least four rows. */
    const int64_t blocks = dc->pix > 1 ? 1 : (dc->c + CB - 1) / CB;
    int64_t bands = 1;
    while (dc->n * bands * blocks < 4 * dc->threads && bands * 8 <= dc->oh) bands *= 2;
    const int64_t tasks = dc->n * bands * blocks;
    const size_t in_image = (size_t)dc->ih * dc->iw * dc->c;
    const size_t out_image = (size_t)dc->oh * dc->ow * dc->c;
    #pragma omp parallel num_threads(dc->threads)
    {
        uint8_t *ring = (uint8_t *)scratch + omp_get_thread_num() * ring_bytes(dc);
        #pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t n = task / (bands * blocks), s = task / blocks % bands;
            band(dc, src + n * in_image, weights, bias, factor, dst + n * out_image,
                    dc->oh * s / bands, dc->oh * (s + 1) / bands, task % blocks * CB, ring);
        }
    }
    return dnnl_success;
#else
    (void)dc; (void)scratch; (void)args;
    return mmx_fail(dnnl_unimplemented, "dw8_conv run: built without AVX512-VNNI");
#endif
}

static const own_kernel_ops DW8_OPS = {"dw8_u8:avx512_core_vnni", scratchpad_size, run};

dnnl_status_t dw8_conv_create(own_kernel **kernel, const int64_t *src_dims, int stride,
        int with_bias, int relu, int dst_s8) {
    PASS(own_kernel_new(kernel, sizeof(dw8_conv), &DW8_OPS));
    dw8_conv *dc = (dw8_conv *)*kernel;
    const int64_t c = src_dims[1];
    /* Stride 2 takes one pixel a group, in whole blocks of 64 channels: a
     * masked last block a pixel at a time was slower than oneDNN's kernel. */
    REQUIRE(dw8_available() && c > 0 && c % VL == 0 && (stride == 1 || stride == 2)
            && (stride == 1 || c % CB == 0), dnnl_unimplemented);
    dc->n = src_dims[0];
    dc->c = c;
    dc->ih = src_dims[2];
    dc->iw = src_dims[3];
    dc->stride = stride;
    dc->oh = (dc->ih - 1) / stride + 1;   /* 3x3, padding 1 */
    dc->ow = (dc->iw - 1) / stride + 1;
    dc->pix = c < CB && CB % c == 0 ? CB / c : 1;
    dc->groups = (dc->ow + dc->pix - 1) / dc->pix;
    const int64_t tail = c % CB;
    dc->tail_pix = stride == 1 && c > CB && (tail == 16 || tail == 32) ? CB / tail : dc->pix;
    dc->with_bias = with_bias;
    dc->relu = relu;
    dc->dst_s8 = dst_s8;
    dc->threads = omp_get_max_threads();
    const dnnl_dims_t src = {dc->n, c, dc->ih, dc->iw}, dst = {dc->n, c, dc->oh, dc->ow};
    const dnnl_dims_t weights = {3, c, LANE};
    own_kernel *k = &dc->base;
    PASS(own_kernel_arg(k, DNNL_ARG_SRC, 4, src, dnnl_u8, dnnl_acdb));
    PASS(own_kernel_arg(k, DNNL_ARG_WEIGHTS, 3, weights, dnnl_s8, dnnl_abc));
    return own_kernel_requantized_args(k, dst, with_bias, dst_s8);
}
