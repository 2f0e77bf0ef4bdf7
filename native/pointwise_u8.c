/* INT8 1x1 convolution (see pointwise_u8.h).
 *
 * The pixels of the whole batch are one row of P pixels of K bytes (NHWC,
 * stride 1), cut into tiles of PIX pixels and blocks of BLOCK tiles; the
 * output channels are cut into chunks: groups of 64, then the vectors of
 * the last channels of fewer than 64. A unit of work is a chunk of a
 * block: each of its tiles sums over all K input channels and is stored.
 * The threads take contiguous runs of units, block by block (a block's
 * bytes stay in L1 through all the chunks), or, where there are few blocks,
 * chunk by chunk (each thread reading its share of the weights only).
 * Of a group, each of the K / 4 lanes of its four weight vectors is loaded
 * once and multiplies every pixel's four input bytes, broadcast.
 * s8 data are read as u8 with 128 added (the sign bits of a block's bytes
 * flipped once, into a buffer), each sum starting at -128 times its
 * weights' sum, as oneDNN's kernels do on VNNI.
 * Where float32 would add the bias exactly and no product leaves int32's
 * range, the sums start at the bias and the epilogue skips that addition
 * and the clamps the saturating narrowing does anyway: three operations on
 * each vector of outputs instead of four to six (against K / 4 `vpdpbusd`).
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
/* Tiles a block, whose bytes stay in L1 across the channels: against 8,
 * 16 was 0.99-1.06x as fast on MobileNet v2's wide expansions and v1's
 * twofold layers at batch 16, 0.96-1.05x at batch 1, and 4 slower
 * (int8_kernels.py, Intel Xeon without AMX, three builds run in turn twice). */
#define BLOCK 16
#define STEP 8           /* vpdpbusd lanes a step of the loop over wide inputs */
/* Fewer blocks a thread: the threads split the channels instead, each reading
 * its share of the weights (a 7x7 image at batch 1: 1.15 against 1.03-1.07x
 * oneDNN's time for 160 to 960 channels, 0.99-1.00 against 0.91 for 320 to
 * 1280; int8_kernels.py, Intel Xeon without AMX, two builds run in turn). */
#define MIN_BLOCKS_A_THREAD 4

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
 * to 0 in u8, kept by min and converted to INT32_MIN. Where `fast` (see
 * starts), the sums hold the bias and every y is finite and within int32:
 * rounding then narrowing with saturation clamps as min and max would,
 * and only relu's 0 in s8 is applied (max with the bottom, -128 without relu). */
static inline __attribute__((always_inline)) __m512i requantized(const consts *c, __m512i acc,
        int64_t ch, const int dst_s8, const int fast) {
    __m512 y = _mm512_cvtepi32_ps(acc);
    if (!fast) y = _mm512_add_ps(y, _mm512_loadu_ps(c->bias + ch));
    y = _mm512_mul_ps(y, _mm512_loadu_ps(c->factor + ch));
    if (fast)
        y = dst_s8 ? _mm512_max_ps(y, c->lo) : y;
    else
        y = dst_s8 ? _mm512_max_ps(_mm512_min_ps(y, c->hi), c->lo) : _mm512_min_ps(c->hi, y);
    return _mm512_cvtps_epi32(y);
}

/* The four bytes at p in every lane. An asm statement, kept in place: as
 * an intrinsic, GCC 12 hoisted a whole tile's broadcasts (32 of them where
 * K is 32) into registers ahead of the sums and spilled the sums. */
static inline __attribute__((always_inline)) __m512i broadcast4(const uint8_t *p) {
    __m512i x;
    __asm__ volatile("vpbroadcastd %1, %0" : "=v"(x) : "m"(*(const int32_t *)p));
    return x;
}

/* The 64 bytes at p, in a register. An asm statement: as an intrinsic, GCC 12
 * folded the load into each of the PIX `vpdpbusd` that read it in the loop
 * over wide inputs, four loads of 64 bytes where one does; AMD Zen 4 loads
 * one such vector a cycle, and ran the kernel at 0.5-0.66x oneDNN's speed on
 * 64 to 512 input channels. */
static inline __attribute__((always_inline)) __m512i load64(const int8_t *p) {
    __m512i x;
    __asm__ volatile("vmovdqu64 %1, %0" : "=v"(x) : "m"(*(const __m512i *)p));
    return x;
}

/* Lane g (input channels 4g to 4g + 3) of the PIX pixels at src times the
 * `vecs` weight vectors at w (a vector's lanes `lanes` * 64 bytes apart),
 * into acc. */
static inline __attribute__((always_inline)) void lane(const pw8_conv *pc,
        const uint8_t *src, const int8_t *w, int64_t lanes, int64_t g, const int vecs,
        __m512i acc[PIX][GROUP]) {
    __m512i wg[GROUP];
    for (int v = 0; v < vecs; v++) wg[v] = load64(w + (v * lanes + g) * 64);
    for (int p = 0; p < PIX; p++) {
        const __m512i x = broadcast4(src + p * pc->k + 4 * g);
        for (int v = 0; v < vecs; v++) acc[p][v] = _mm512_dpbusd_epi32(acc[p][v], x, wg[v]);
    }
}

/* The PIX pixels at src (K bytes each) times `vecs` vectors of output
 * channels from ch, into acc. Few input channels (kg lanes, known when
 * compiled) are unrolled whole, so that the accumulators stay in registers
 * (as a loop, GCC 12 copied all 16 between registers, and spilled one, at
 * each lane); wide ones (kg 0) loop over steps of STEP lanes, unrolled. */
static inline __attribute__((always_inline)) void sums(const pw8_conv *pc, const consts *c,
        const uint8_t *src, int64_t ch, const int kg, const int vecs,
        __m512i acc[PIX][GROUP]) {
    const int64_t lanes = pc->k / 4;
    const int8_t *w = c->weights + ch / VL * lanes * 64;
    for (int v = 0; v < vecs; v++) {
        const __m512i start = _mm512_loadu_si512(c->start + ch + v * VL);
        for (int p = 0; p < PIX; p++) acc[p][v] = start;
    }
    if (kg) {
        #pragma GCC unroll 8
        for (int g = 0; g < kg; g++) lane(pc, src, w, lanes, g, vecs, acc);
    } else {
        for (int64_t g0 = 0; g0 < lanes; g0 += STEP) {
            #pragma GCC unroll 8
            for (int g = 0; g < STEP; g++) lane(pc, src, w, lanes, g0 + g, vecs, acc);
        }
    }
}

/* One pixel's four vectors of a whole group, requantized and narrowed by
 * the packs into one store of 64 bytes at dst. */
static inline __attribute__((always_inline)) void store_group(const consts *c, uint8_t *dst,
        int64_t ch, __m512i a0, __m512i a1, __m512i a2, __m512i a3, const int dst_s8,
        const int fast) {
    const __m512i words0 = _mm512_packs_epi32(requantized(c, a0, ch, dst_s8, fast),
                                              requantized(c, a1, ch + VL, dst_s8, fast));
    const __m512i words1 = _mm512_packs_epi32(requantized(c, a2, ch + 2 * VL, dst_s8, fast),
                                              requantized(c, a3, ch + 3 * VL, dst_s8, fast));
    _mm512_storeu_si512(dst + ch, dst_s8 ? _mm512_packs_epi16(words0, words1)
                                        : _mm512_packus_epi16(words0, words1));
}

/* The PIX pixels at src into dst, a whole group of 64 channels from ch. */
static inline __attribute__((always_inline)) void group(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, int64_t ch, const int kg, const int dst_s8,
        const int fast) {
    __m512i acc[PIX][GROUP];
    sums(pc, c, src, ch, kg, GROUP, acc);
    for (int p = 0; p < PIX; p++)
        store_group(c, dst + p * pc->oc, ch, acc[p][0], acc[p][1], acc[p][2], acc[p][3],
                    dst_s8, fast);
}

/* The PIX pixels at src into dst: the `vecs` < GROUP vectors of channels
 * from ch that end them, each narrowed alone. */
static inline __attribute__((always_inline)) void tail(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, int64_t ch, const int kg, const int vecs,
        const int dst_s8, const int fast) {
    __m512i acc[PIX][GROUP];
    sums(pc, c, src, ch, kg, vecs, acc);
    for (int p = 0; p < PIX; p++)
        for (int v = 0; v < vecs; v++) {
            const __m512i q = requantized(c, acc[p][v], ch + v * VL, dst_s8, fast);
            _mm_storeu_si128((__m128i *)(dst + p * pc->oc + ch + v * VL), dst_s8
                    ? _mm512_cvtsepi32_epi8(q)
                    : _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, _mm512_setzero_si512())));
        }
}

/* A tile's PIX * K input bytes of s8 data read as u8: copied to `in` with
 * the sign bits flipped, once a block rather than at each broadcast of each
 * pass over its channels. Whole vectors are stored (a masked store would
 * keep the broadcasts from reading it until it retires); the bytes past the
 * tile's are never read. */
static inline __attribute__((always_inline)) void tile_input(const consts *c,
        const uint8_t *src, int64_t bytes, uint8_t *in) {
    for (int64_t at = 0; at < bytes; at += 64) {
        const int64_t left = bytes - at;
        const __mmask64 m = left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
        _mm512_store_si512(in + at, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + at),
                                                     c->flip));
    }
}

/* The first pixel of tile t. The last tile ends at the last pixel,
 * overlapping the one before where PIX does not divide the pixels: those
 * are computed twice, the same way. */
static inline int64_t tile_pixel(const pw8_conv *pc, int64_t t) {
    return t * PIX + PIX <= pc->pixels ? t * PIX : pc->pixels - PIX;
}

/* Channel chunk `chunk` (a group of 64, or the vectors after the last
 * group) of block `blk`'s tiles, whose inputs are at in[i] (the data, or
 * the block's flipped copy). */
static inline __attribute__((always_inline)) void block_chunk(const pw8_conv *pc,
        const consts *c, const uint8_t *const *in, uint8_t *dst, int64_t blk, int64_t chunk,
        int64_t ntiles, const int kg, const int dst_s8, const int fast) {
    const int64_t ch = chunk * GROUP * VL, t0 = blk * BLOCK;
    const int64_t t1 = t0 + BLOCK < ntiles ? t0 + BLOCK : ntiles;
    const int vecs = (int)((pc->oc - ch) / VL < GROUP ? (pc->oc - ch) / VL : GROUP);
    for (int64_t t = t0; t < t1; t++) {
        uint8_t *out = dst + tile_pixel(pc, t) * pc->oc;
        switch (vecs) {
        case 1: tail(pc, c, in[t - t0], out, ch, kg, 1, dst_s8, fast); break;
        case 2: tail(pc, c, in[t - t0], out, ch, kg, 2, dst_s8, fast); break;
        case 3: tail(pc, c, in[t - t0], out, ch, kg, 3, dst_s8, fast); break;
        default: group(pc, c, in[t - t0], out, ch, kg, dst_s8, fast); break;
        }
    }
}

/* Work units [u0, u1): unit u is (block, chunk) = (u / nchunks, u % nchunks),
 * or with chunks_first (few blocks: the threads split the channels, each
 * reading only its share of the weights) (u % nblocks, u / nblocks). A
 * block's s8 inputs are flipped when a unit first reads them. kg, the dst
 * type and the epilogue's path are constants where inlined. */
static inline __attribute__((always_inline)) void units(const pw8_conv *pc, const consts *c,
        const uint8_t *src, uint8_t *dst, int64_t u0, int64_t u1, int chunks_first,
        const int kg, const int dst_s8, const int fast) {
    /* A copy the stores to dst (bytes, which may alias anything) cannot
     * reach: its pointers and bounds stay in registers, not reloaded after
     * each store. */
    const consts own = *c;
    const int64_t ntiles = (pc->pixels + PIX - 1) / PIX;
    const int64_t nblocks = (ntiles + BLOCK - 1) / BLOCK;
    const int64_t nchunks = (pc->oc + GROUP * VL - 1) / (GROUP * VL);
    uint8_t flipped[BLOCK][PIX * PW8_MAX_K] __attribute__((aligned(64)));
    const uint8_t *in[BLOCK];
    int64_t read = -1;   /* the block whose inputs `in` points at */
    /* Unit u0's place, then a step at a time rather than two divisions a unit. */
    int64_t blk = chunks_first ? u0 % nblocks : u0 / nchunks;
    int64_t chunk = chunks_first ? u0 / nblocks : u0 % nchunks;
    for (int64_t u = u0; u < u1; u++) {
        if (blk != read) {
            for (int64_t t = blk * BLOCK; t < (blk + 1) * BLOCK && t < ntiles; t++) {
                const uint8_t *x = src + tile_pixel(pc, t) * pc->k;
                if (pc->src_s8) {
                    tile_input(&own, x, PIX * pc->k, flipped[t - blk * BLOCK]);
                    x = flipped[t - blk * BLOCK];
                }
                in[t - blk * BLOCK] = x;
            }
            read = blk;
        }
        block_chunk(pc, &own, in, dst, blk, chunk, ntiles, kg, dst_s8, fast);
        if (chunks_first && ++blk == nblocks) {
            blk = 0;
            chunk++;
        } else if (!chunks_first && ++chunk == nchunks) {
            chunk = 0;
            blk++;
        }
    }
}

/* One function for each lane count (0: wide), dst type and epilogue
 * (fast or not), the three constants where `units` is inlined: in one function
 * with all 36, GCC 12 kept the sums in registers in a few of them only. */
typedef void units_fn(const pw8_conv *pc, const consts *c, const uint8_t *src, uint8_t *dst,
                      int64_t u0, int64_t u1, int chunks_first);
#define PW8_UNITS(kg, s8, f)                                                          \
    static void units_##kg##_##s8##_##f(const pw8_conv *pc, const consts *c,         \
            const uint8_t *src, uint8_t *dst, int64_t u0, int64_t u1, int cf) {       \
        units(pc, c, src, dst, u0, u1, cf, kg, s8, f);                                \
    }
#define PW8_UNITS_OF(kg) PW8_UNITS(kg, 0, 0) PW8_UNITS(kg, 0, 1) PW8_UNITS(kg, 1, 0) \
    PW8_UNITS(kg, 1, 1)
PW8_UNITS_OF(0) PW8_UNITS_OF(1) PW8_UNITS_OF(2) PW8_UNITS_OF(3) PW8_UNITS_OF(4)
PW8_UNITS_OF(5) PW8_UNITS_OF(6) PW8_UNITS_OF(7) PW8_UNITS_OF(8)
#define PW8_ROW(kg) {{units_##kg##_0_0, units_##kg##_0_1}, {units_##kg##_1_0, units_##kg##_1_1}}
static units_fn *const UNITS[9][2][2] = {PW8_ROW(0), PW8_ROW(1), PW8_ROW(2), PW8_ROW(3),
        PW8_ROW(4), PW8_ROW(5), PW8_ROW(6), PW8_ROW(7), PW8_ROW(8)};
#undef PW8_ROW
#undef PW8_UNITS_OF
#undef PW8_UNITS

/* Units [u0, u1): the lane count known when compiled up to 32 input
 * channels, wider inputs in steps of STEP lanes. */
static void run_units(const pw8_conv *pc, const consts *c, const uint8_t *src, uint8_t *dst,
        int64_t u0, int64_t u1, int cf, int fast) {
    const int64_t kg = pc->k / 4 <= 8 ? pc->k / 4 : 0;
    UNITS[kg][pc->dst_s8][fast](pc, c, src, dst, u0, u1, cf);
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
 * (x + 128), -128 times the slot's weights' sum. Returns whether the
 * epilogue can take its fast path, and then adds the bias there too: every
 * bias small enough that float(acc) + float(bias) and float(acc + bias) are
 * the same float32 (both terms and the sum below 2^24, integers all), and
 * every factor finite and small enough that no sum times it leaves int32's
 * range (2^30, with room for float32's rounding). Computed at each run (a
 * few hundred instructions, against the layer's tens of thousands): the
 * weights, bias and factors are the plan's arguments, and may change
 * between runs. */
static int starts(const pw8_conv *pc, const int8_t *weights, const float *bias,
        const float *factor, int32_t *start) {
    const __m512i x128 = _mm512_set1_epi8((char)0x80);
    for (int64_t ch = 0; ch < pc->oc; ch += VL) {
        __m512i sum = _mm512_setzero_si512();
        for (int64_t g = 0; pc->src_s8 && g < pc->k / 4; g++)
            sum = _mm512_dpbusd_epi32(sum, x128,
                    _mm512_loadu_si512(weights + (ch / VL * (pc->k / 4) + g) * 64));
        _mm512_storeu_si512(start + ch, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    }
    const double products = (double)pc->k * 255 * 128;   /* the most |acc| less the bias */
    for (int64_t ch = 0; ch < pc->oc; ch++)   /* NaN fails both */
        if (!(products + fabs(bias[ch]) <= 1 << 24)
                || !((products + fabs(bias[ch])) * fabs(factor[ch]) <= 1 << 30))
            return 0;
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
    const int fast = starts(pc, ptr[1], bias, ptr[2 + b], start);
    const consts c = {ptr[1], start, bias, ptr[2 + b],
                      _mm512_set1_epi8(pc->src_s8 ? (char)0x80 : 0),
                      _mm512_set1_ps(pc->dst_s8 ? 127.f : 255.f),
                      _mm512_set1_ps(pc->relu ? 0.f : -128.f)};
    const uint8_t *src = ptr[0];
    uint8_t *dst = ptr[3 + b];
    const int64_t ntiles = (pc->pixels + PIX - 1) / PIX;
    const int64_t nblocks = (ntiles + BLOCK - 1) / BLOCK;
    const int64_t nunits = nblocks * ((pc->oc + GROUP * VL - 1) / (GROUP * VL));
    #pragma omp parallel
    {
        /* Contiguous runs of units, one a thread: whole blocks where there
         * are enough to go round, else shares of the channels. */
        const int64_t n = omp_get_num_threads(), i = omp_get_thread_num();
        run_units(pc, &c, src, dst, nunits * i / n, nunits * (i + 1) / n,
                  nblocks < MIN_BLOCKS_A_THREAD * n, fast);
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
    REQUIRE(pw8_available() && k > 0 && k % 4 == 0 && k <= PW8_MAX_K
            && (k <= 32 || k % (4 * STEP) == 0) && oc > 0
            && oc % VL == 0 && pc->pixels >= PIX, dnnl_unimplemented);
    pc->k = k;
    pc->oc = oc;
    pc->src_s8 = src_s8;
    pc->with_bias = with_bias;
    pc->relu = relu;
    pc->dst_s8 = dst_s8;
    const dnnl_dims_t src = {src_dims[0], k, src_dims[2], src_dims[3]};
    const dnnl_dims_t dst = {src_dims[0], oc, src_dims[2], src_dims[3]};
    const dnnl_dims_t weights = {oc / VL, k / 4, VL * 4};
    own_kernel *kern = &pc->base;
    PASS(own_kernel_arg(kern, DNNL_ARG_SRC, 4, src, src_s8 ? dnnl_s8 : dnnl_u8, dnnl_acdb));
    PASS(own_kernel_arg(kern, DNNL_ARG_WEIGHTS, 3, weights, dnnl_s8, dnnl_abc));
    return own_kernel_requantized_args(kern, dst, with_bias, dst_s8);
}
