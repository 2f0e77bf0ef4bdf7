/* Three-channel NCHW float32 to NHWC float32 or bfloat16 (see nhwc_input.h). */

#include <omp.h>

#include "oneapi/dnnl/dnnl.h"

#include "shim.h"
#include "own_kernel.h"
#include "nhwc_input.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#define NHWC_KERNEL 1
#endif

#define VL 16          /* pixels per vector of float32 */
#define CHUNK 4096     /* pixels per task: a thread's share of one image */

typedef struct {
    own_kernel base;
    int64_t n, hw;     /* images, pixels an image */
    int bf16;          /* dst bfloat16, else float32 */
} nhwc_input;

int nhwc_input_available(void) {
#ifdef NHWC_KERNEL
    return 1;
#else
    return 0;
#endif
}

#ifdef NHWC_KERNEL
/* The bfloat16 nearest to x, ties to even (NaN: a quiet NaN of its sign). */
static inline uint16_t bf16_of(float x) {
    union { float f; uint32_t u; } v = {x};
    if (x != x) return (uint16_t)((v.u >> 16 & 0x8000) | 0x7FC0);
    return (uint16_t)((v.u + 0x7FFF + (v.u >> 16 & 1)) >> 16);
}

/* Pixels [p0, p1) of one image, one at a time (the tail of a vector loop). */
static void pixels(const float *src, void *dst, int64_t hw, int64_t p0, int64_t p1,
        int bf16) {
    for (int64_t p = p0; p < p1; p++)
        for (int k = 0; k < 3; k++) {
            const float x = src[k * hw + p];
            if (bf16) ((uint16_t *)dst)[3 * p + k] = bf16_of(x);
            else ((float *)dst)[3 * p + k] = x;
        }
}

/* bf16_of on 16 lanes. */
static inline __m256i bf16_of16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512i quiet = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
            _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(r, nan, quiet));
}

/* Pixels [p0, p1) of one image, p1 - p0 a multiple of 16: for output vector j
 * of each 16 pixels (48 values), a permute takes its lanes of planes 0 and 1
 * (index 16 + i: lane i of plane 1) and a second puts plane 2's lanes in. */
static void vectors(const float *src, void *dst, int64_t hw, int64_t p0, int64_t p1,
        int bf16) {
    static const int32_t first[3][VL] = {
        {0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5},
        {21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26},
        {0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0}};
    static const int32_t second[3][VL] = {
        {0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15},
        {0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15},
        {26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31}};
    __m512i a[3], b[3];
    for (int j = 0; j < 3; j++) {
        a[j] = _mm512_loadu_si512(first[j]);
        b[j] = _mm512_loadu_si512(second[j]);
    }
    for (int64_t p = p0; p < p1; p += VL) {
        const __m512 r = _mm512_loadu_ps(src + p), g = _mm512_loadu_ps(src + hw + p),
                bl = _mm512_loadu_ps(src + 2 * hw + p);
        for (int j = 0; j < 3; j++) {
            const __m512 v = _mm512_permutex2var_ps(
                    _mm512_permutex2var_ps(r, a[j], g), b[j], bl);
            if (bf16)
                _mm256_storeu_si256((__m256i *)((uint16_t *)dst + 3 * p + VL * j),
                        bf16_of16(v));
            else
                _mm512_storeu_ps((float *)dst + 3 * p + VL * j, v);
        }
    }
}
#endif

static dnnl_status_t run(const own_kernel *k, void *scratch,
        const dnnl_exec_arg_t *args) {
    (void)scratch;
    const nhwc_input *t = (const nhwc_input *)k;
#ifdef NHWC_KERNEL
    void *ptr[OWN_MAX_ARGS] = {NULL};
    PASS(own_kernel_handles(k, args, ptr));
    const float *src = ptr[0];
    char *dst = ptr[1];
    const size_t out_image = (size_t)3 * t->hw * (t->bf16 ? 2 : 4);
    const int64_t chunks = (t->hw + CHUNK - 1) / CHUNK, tasks = t->n * chunks;
    #pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < tasks; task++) {
        const int64_t n = task / chunks, p0 = task % chunks * CHUNK;
        const int64_t p1 = p0 + CHUNK < t->hw ? p0 + CHUNK : t->hw;
        const int64_t whole = p0 + (p1 - p0) / VL * VL;
        const float *image = src + n * 3 * t->hw;
        vectors(image, dst + n * out_image, t->hw, p0, whole, t->bf16);
        pixels(image, dst + n * out_image, t->hw, whole, p1, t->bf16);
    }
    return dnnl_success;
#else
    (void)t; (void)args;
    return mmx_fail(dnnl_unimplemented, "nhwc_input run: built without AVX-512");
#endif
}

static const own_kernel_ops NHWC_INPUT_OPS = {"nhwc_input:avx512_core", NULL, run};

dnnl_status_t nhwc_input_create(own_kernel **kernel, const int64_t *dims,
        dnnl_data_type_t dst_dt) {
    PASS(own_kernel_new(kernel, sizeof(nhwc_input), &NHWC_INPUT_OPS));
    nhwc_input *t = (nhwc_input *)*kernel;
    REQUIRE(nhwc_input_available() && dims[1] == 3, dnnl_unimplemented);
    REQUIRE(dst_dt == dnnl_f32 || dst_dt == dnnl_bf16, dnnl_unimplemented);
    t->n = dims[0];
    t->hw = dims[2] * dims[3];
    t->bf16 = dst_dt == dnnl_bf16;
    PASS(own_kernel_arg(&t->base, DNNL_ARG_SRC, 4, dims, dnnl_f32, dnnl_abcd));
    PASS(own_kernel_arg(&t->base, DNNL_ARG_DST, 4, dims, dst_dt, dnnl_acdb));
    return dnnl_success;
}
