/* The CPU's peak multiply-accumulate rates, for roofline.py.
 *
 * Each loop keeps independent accumulators in vector registers, so
 * that nothing but the instruction's throughput limits it, on every OpenMP
 * thread at once. It is compiled for the machine it runs on (-march=native):
 * a precision whose instruction the CPU lacks reports 0.
 *   float32  vfmadd231ps: 16 MACs per 512-bit instruction (AVX-512F)
 *   bfloat16 vdpbf16ps:   32 (AVX512_BF16)
 *   int8     vpdpbusd:    64 (AVX512_VNNI), u8 times s8 into s32, as oneDNN's
 *                         INT8 kernels without AMX
 * and, where the CPU has AMX, the tile dot products oneDNN's AMX kernels run:
 *   amx_bfloat16 tdpbf16ps: 16 x 16 x 32 = 8192 MACs per instruction
 *   amx_int8     tdpbusd:   16 x 16 x 64 = 16384
 */
#include <immintrin.h>
#include <omp.h>
#include <time.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Twenty-four accumulators, each updated once per iteration (bfloat16's dot
 * product needs more than twelve in flight to reach its peak); the empty asm
 * keeps them in registers and the loop from being folded away. */
#define ACCUMULATE(OP) \
    c0 = OP(c0); c1 = OP(c1); c2 = OP(c2); c3 = OP(c3); c4 = OP(c4); c5 = OP(c5); \
    c6 = OP(c6); c7 = OP(c7); c8 = OP(c8); c9 = OP(c9); c10 = OP(c10); c11 = OP(c11); \
    c12 = OP(c12); c13 = OP(c13); c14 = OP(c14); c15 = OP(c15); c16 = OP(c16); \
    c17 = OP(c17); c18 = OP(c18); c19 = OP(c19); c20 = OP(c20); c21 = OP(c21); \
    c22 = OP(c22); c23 = OP(c23); \
    __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), \
                     "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11)); \
    __asm__ volatile("" : "+v"(c12), "+v"(c13), "+v"(c14), "+v"(c15), "+v"(c16), \
                     "+v"(c17), "+v"(c18), "+v"(c19), "+v"(c20), "+v"(c21), "+v"(c22), \
                     "+v"(c23))

#define PEAK(NAME, VEC, ZERO, OP, MACS)                                        \
    double NAME(long iterations) {                                             \
        double start = seconds();                                              \
        int threads = 1;                                                       \
        _Pragma("omp parallel")                                                \
        {                                                                      \
            VEC c0 = ZERO, c1 = ZERO, c2 = ZERO, c3 = ZERO, c4 = ZERO, c5 = ZERO, \
                c6 = ZERO, c7 = ZERO, c8 = ZERO, c9 = ZERO, c10 = ZERO, c11 = ZERO, \
                c12 = ZERO, c13 = ZERO, c14 = ZERO, c15 = ZERO, c16 = ZERO, c17 = ZERO, \
                c18 = ZERO, c19 = ZERO, c20 = ZERO, c21 = ZERO, c22 = ZERO, c23 = ZERO; \
            for (long i = 0; i < iterations; i++) { ACCUMULATE(OP); }        \
            _Pragma("omp single") threads = omp_get_num_threads();             \
        }                                                                      \
        return 24.0 * (MACS) * iterations * threads / (seconds() - start) / 1e9; \
    }

#if defined(__AVX512F__)
#define F32_OP(c) _mm512_fmadd_ps(c, _mm512_set1_ps(0.999f), _mm512_set1_ps(1e-3f))
PEAK(peak_float32, __m512, _mm512_setzero_ps(), F32_OP, 16)
#else
double peak_float32(long iterations) { (void)iterations; return 0; }
#endif

#if defined(__AVX512BF16__)
#define BF16_OP(c) _mm512_dpbf16_ps(c, (__m512bh)_mm512_set1_epi16(0x3f80), \
                                    (__m512bh)_mm512_set1_epi16(0x3f80))
PEAK(peak_bfloat16, __m512, _mm512_setzero_ps(), BF16_OP, 32)
#else
double peak_bfloat16(long iterations) { (void)iterations; return 0; }
#endif

#if defined(__AVX512VNNI__)
#define INT8_OP(c) _mm512_dpbusd_epi32(c, _mm512_set1_epi8(1), _mm512_set1_epi8(1))
PEAK(peak_int8, __m512i, _mm512_setzero_si512(), INT8_OP, 64)
#else
double peak_int8(long iterations) { (void)iterations; return 0; }
#endif

#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AMX_BF16__)
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023   /* Linux: ask for a state component */
#define XFEATURE_XTILEDATA 18        /* the tiles' data */

/* Palette 1: eight tiles of 16 rows of 64 bytes (the largest), laid out as
 * LDTILECFG reads its 64 bytes. */
typedef struct {
    unsigned char palette, start_row, reserved[14];
    unsigned short bytes_per_row[16];
    unsigned char rows[16];
} tile_config;

/* Four accumulators (tiles 0-3), each updated once per iteration from two A
 * tiles (4, 5) and two B tiles (6, 7): a dot product's latency is about
 * three of its issue intervals, so four keep the unit busy. The operands are
 * zeros: the rate does not depend on the values. */
#define AMX_PEAK(NAME, OP, MACS)                                               \
    double NAME(long iterations) {                                             \
        if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA))  \
            return 0;   /* the kernel does not let this process use tiles */   \
        double start = seconds();                                              \
        int threads = 1;                                                       \
        _Pragma("omp parallel")                                                \
        {                                                                      \
            static const unsigned char zeros[16 * 64] __attribute__((aligned(64))); \
            tile_config config = {.palette = 1};                               \
            for (int t = 0; t < 8; t++) {                                      \
                config.bytes_per_row[t] = 64;                                  \
                config.rows[t] = 16;                                           \
            }                                                                  \
            _tile_loadconfig(&config);                                         \
            _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);        \
            _tile_loadd(4, zeros, 64); _tile_loadd(5, zeros, 64);              \
            _tile_loadd(6, zeros, 64); _tile_loadd(7, zeros, 64);              \
            for (long i = 0; i < iterations; i++) {                            \
                OP(0, 4, 6); OP(1, 4, 7); OP(2, 5, 6); OP(3, 5, 7);            \
            }                                                                  \
            _tile_release();                                                   \
            _Pragma("omp single") threads = omp_get_num_threads();             \
        }                                                                      \
        return 4.0 * (MACS) * iterations * threads / (seconds() - start) / 1e9; \
    }

#define AMX_BF16_OP(c, a, b) _tile_dpbf16ps(c, a, b)
#define AMX_INT8_OP(c, a, b) _tile_dpbusd(c, a, b)
AMX_PEAK(peak_amx_bfloat16, AMX_BF16_OP, 16 * 16 * 32)
AMX_PEAK(peak_amx_int8, AMX_INT8_OP, 16 * 16 * 64)
#else
double peak_amx_bfloat16(long iterations) { (void)iterations; return 0; }
double peak_amx_int8(long iterations) { (void)iterations; return 0; }
#endif
