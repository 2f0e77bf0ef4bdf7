/* Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution (see winograd.h): the
 * input and output transforms, and the convolution and plan step that run
 * them around a oneDNN matmul.
 *
 * Each transform walks tiles in parallel (OpenMP, the same libgomp team that
 * oneDNN uses) and, inside a tile, channels in vectors of VL. Data is NHWC
 * (oneDNN's acdb) and the transformed tensors are [alpha^2][tiles][channels]
 * (alpha = m + 2 for m x m output tiles), so every inner loop runs over
 * contiguous channels; channel counts must be multiples of VL. The matrices
 * are B^T and A^T for the interpolation points 0, 1, -1, 2, -2 and infinity
 * (F(4x4)), or 0, 1, -1 and infinity (F(2x2)).
 *
 * Errors follow the shim's rule (shim.h): CHECK and REQUIRE record the
 * failing call for Python, and every handle lives on the wino_conv or
 * wino_step being built, so an early return leaks nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oneapi/dnnl/dnnl.h"

#include "minimx_dnnl.h"
#include "shim.h"
#include "winograd.h"

#define VL 16 /* channels per vector step: one AVX-512 register */
#define MAX_ALPHA 6 /* input tile side of F(4x4, 3x3) */

typedef struct {
    int m, alpha;          /* output tile side (4 or 2) and input tile side (m + 2) */
    int64_t c, h, w;       /* input channels and size (per image) */
    int64_t k, oh, ow;     /* output channels and size */
    int64_t pad_t, pad_l;  /* top and left zero padding */
    int64_t tiles_h, tiles_w; /* ceil(oh / m), ceil(ow / m) */
} wino_shape;

/* What follows the product: dst = post_act(act(y + bias) + sum_scale * dst).
 * An activation is leaky relu (slope alpha; alpha 0 is relu) or clip to
 * [alpha, beta]; ACT_NONE skips it. */
enum { ACT_NONE = 0, ACT_RELU = 1, ACT_CLIP = 2 };

typedef struct {
    int act;
    float act_alpha, act_beta;
    int sum;
    float sum_scale;
    int post_act;
    float post_alpha, post_beta;
} wino_post;

/* x0..x3: lane v of four vectors x[0..3] spaced `st` floats apart; LOAD6
 * adds x4 and x5. */
#define LOAD4(x, st, v) \
    float x0 = (x)[0 * (st) + v], x1 = (x)[1 * (st) + v]; \
    float x2 = (x)[2 * (st) + v], x3 = (x)[3 * (st) + v]
#define LOAD6(x, st, v) \
    LOAD4(x, st, v); \
    float x4 = (x)[4 * (st) + v], x5 = (x)[5 * (st) + v]

/* Where tile t (counted over all images of the chunk) lies: its image and
 * its row and column among the image's tiles. */
static inline void tile_at(const wino_shape *s, int64_t t, int64_t *n,
        int64_t *ty, int64_t *tx) {
    const int64_t tiles = s->tiles_h * s->tiles_w;
    *n = t / tiles;
    *ty = (t % tiles) / s->tiles_w;
    *tx = t % s->tiles_w;
}

/* B^T x for a column of `alpha` vectors x[0..alpha-1] (stride `st`): alpha
 * rows into out. */
static inline void bt_rows(int alpha, float out[][VL], const float *x, int64_t st) {
    if (alpha == 6) {
        for (int v = 0; v < VL; v++) {
            LOAD6(x, st, v);
            out[0][v] = 4.f * x0 - 5.f * x2 + x4;
            out[1][v] = -4.f * (x1 + x2) + x3 + x4;
            out[2][v] = 4.f * (x1 - x2) - x3 + x4;
            out[3][v] = 2.f * (x3 - x1) - x2 + x4;
            out[4][v] = 2.f * (x1 - x3) - x2 + x4;
            out[5][v] = 4.f * x1 - 5.f * x3 + x5;
        }
    } else {
        for (int v = 0; v < VL; v++) {
            LOAD4(x, st, v);
            out[0][v] = x0 - x2;
            out[1][v] = x1 + x2;
            out[2][v] = x2 - x1;
            out[3][v] = x1 - x3;
        }
    }
}

/* v[alpha^2][nimg * T][c] from `nimg` NHWC images at src (T = tiles per
 * image). Inlined with `alpha` a constant (`input_transform`), so that each
 * tile size gets loops of fixed length. */
static inline __attribute__((always_inline)) void input_tiles(const wino_shape *s,
        const float *src, int64_t nimg, float *v, const int alpha) {
    const int64_t tiles = s->tiles_h * s->tiles_w, total = nimg * tiles;
    const int64_t c = s->c, plane = total * c;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < total; t++) {
        int64_t n, ty, tx;
        tile_at(s, t, &n, &ty, &tx);
        const float *img = src + n * s->h * s->w * c;
        const int64_t y0 = ty * (alpha - 2) - s->pad_t, x0 = tx * (alpha - 2) - s->pad_l;
        for (int64_t c0 = 0; c0 < c; c0 += VL) {
            float d[MAX_ALPHA][MAX_ALPHA][VL], rows[MAX_ALPHA][MAX_ALPHA][VL];
            float out[MAX_ALPHA][VL];
            for (int i = 0; i < alpha; i++)
                for (int j = 0; j < alpha; j++) {
                    const int64_t y = y0 + i, x = x0 + j;
                    if (y < 0 || y >= s->h || x < 0 || x >= s->w)
                        memset(d[i][j], 0, sizeof(d[i][j]));
                    else
                        memcpy(d[i][j], img + (y * s->w + x) * c + c0,
                                sizeof(d[i][j]));
                }
            /* rows = B^T d, column by column; then each row times B. */
            for (int j = 0; j < alpha; j++) {
                bt_rows(alpha, out, &d[0][j][0], MAX_ALPHA * VL);
                for (int i = 0; i < alpha; i++)
                    memcpy(rows[i][j], out[i], sizeof(out[i]));
            }
            for (int i = 0; i < alpha; i++) {
                bt_rows(alpha, out, &rows[i][0][0], VL);
                for (int j = 0; j < alpha; j++)
                    memcpy(v + (i * alpha + j) * plane + t * c + c0, out[j],
                            sizeof(out[j]));
            }
        }
    }
}

/* A^T x for a column of `alpha` vectors x[0..alpha-1] (stride `st`): m = alpha
 * - 2 rows into out. */
static inline void at_rows(int alpha, float out[][VL], const float *x, int64_t st) {
    if (alpha == 6) {
        for (int v = 0; v < VL; v++) {
            LOAD6(x, st, v);
            float p12 = x1 + x2, m12 = x1 - x2, p34 = x3 + x4, m34 = x3 - x4;
            out[0][v] = x0 + p12 + p34;
            out[1][v] = m12 + 2.f * m34;
            out[2][v] = p12 + 4.f * p34;
            out[3][v] = m12 + 8.f * m34 + x5;
        }
    } else {
        for (int v = 0; v < VL; v++) {
            LOAD4(x, st, v);
            out[0][v] = x0 + x1 + x2;
            out[1][v] = x1 - x2 - x3;
        }
    }
}

static inline float activate(int act, float alpha, float beta, float x) {
    /* As oneDNN's relu: no slope gives 0 for NaN and -inf, not 0 * x;
       as oneDNN's clip: NaN gives alpha (the comparison with it is false). */
    if (act == ACT_RELU) return x > 0.f ? x : alpha == 0.f ? 0.f : alpha * x;
    if (act == ACT_CLIP) return x > alpha ? (x > beta ? beta : x) : alpha;
    return x;
}

/* `nimg` NHWC images at dst from m[alpha^2][nimg * T][k]; bias may be NULL.
 * Inlined with `alpha` a constant, as input_tiles. */
static inline __attribute__((always_inline)) void output_tiles(const wino_shape *s,
        const float *m, int64_t nimg, const float *bias, const wino_post *post,
        float *dst, const int alpha) {
    const int64_t tiles = s->tiles_h * s->tiles_w, total = nimg * tiles;
    const int64_t k = s->k, plane = total * k;
    const int side = alpha - 2;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < total; t++) {
        int64_t n, ty, tx;
        tile_at(s, t, &n, &ty, &tx);
        float *img = dst + n * s->oh * s->ow * k;
        for (int64_t k0 = 0; k0 < k; k0 += VL) {
            float in[MAX_ALPHA][MAX_ALPHA][VL], rows[MAX_ALPHA][MAX_ALPHA][VL];
            float out[MAX_ALPHA][VL], b[VL];
            for (int i = 0; i < alpha * alpha; i++)
                memcpy(in[i / alpha][i % alpha], m + i * plane + t * k + k0, sizeof(b));
            for (int v = 0; v < VL; v++) b[v] = bias ? bias[k0 + v] : 0.f;
            for (int j = 0; j < alpha; j++) {
                at_rows(alpha, out, &in[0][j][0], MAX_ALPHA * VL);
                for (int i = 0; i < side; i++)
                    memcpy(rows[i][j], out[i], sizeof(out[i]));
            }
            for (int i = 0; i < side; i++) {
                const int64_t y = ty * side + i;
                if (y >= s->oh) break;
                at_rows(alpha, out, &rows[i][0][0], VL);
                for (int j = 0; j < side; j++) {
                    const int64_t x = tx * side + j;
                    if (x >= s->ow) break;
                    float *o = img + (y * s->ow + x) * k + k0;
                    for (int v = 0; v < VL; v++) {
                        float r = activate(post->act, post->act_alpha,
                                post->act_beta, out[j][v] + b[v]);
                        if (post->sum) r += post->sum_scale * o[v];
                        o[v] = activate(post->post_act, post->post_alpha,
                                post->post_beta, r);
                    }
                }
            }
        }
    }
}

static void input_transform(const wino_shape *s, const float *src, int64_t nimg,
        float *v) {
    if (s->alpha == 6) input_tiles(s, src, nimg, v, 6);
    else input_tiles(s, src, nimg, v, 4);
}

static void output_transform(const wino_shape *s, const float *m, int64_t nimg,
        const float *bias, const wino_post *post, float *dst) {
    if (s->alpha == 6) output_tiles(s, m, nimg, bias, post, dst, 6);
    else output_tiles(s, m, nimg, bias, post, dst, 4);
}

/* ---- the convolution ---- */

/* The transforms of one convolution, and its alpha^2 products: a oneDNN
 * matmul [alpha^2][rows][c] x [alpha^2][c][k] -> [alpha^2][rows][k] over
 * chunks of `images` images, whose transformed tiles (v, m) live in the
 * plan's scratchpad. */
struct wino_conv {
    wino_shape shape;
    wino_post post;
    int with_bias;
    int64_t batch, images;
    size_t v_size, m_size; /* bytes, 64-byte multiples */
    dnnl_memory_desc_t mds[6]; /* indexed by the enum below */
    dnnl_primitive_desc_t pd; /* the matmul's */
    dnnl_primitive_t matmul;
    char impl[64];
};

enum { MD_V, MD_U, MD_M, MD_SRC, MD_BIAS, MD_DST, NUM_MDS };

/* The post-op chain as the output transform applies it:
 * [eltwise] [sum [eltwise]], each eltwise relu or clip. */
static dnnl_status_t parse_post_ops(
        wino_post *wp, int npost, const mmx_post_op *post) {
    memset(wp, 0, sizeof(*wp));
    int *act = &wp->act;
    float *alpha = &wp->act_alpha, *beta = &wp->act_beta;
    for (int i = 0; i < npost; i++) {
        const mmx_post_op *po = &post[i];
        if (po->kind == MMX_POST_SUM && !wp->sum) {
            wp->sum = 1;
            wp->sum_scale = po->alpha;
            act = &wp->post_act;
            alpha = &wp->post_alpha;
            beta = &wp->post_beta;
            continue;
        }
        REQUIRE(po->kind == MMX_POST_ELTWISE && *act == ACT_NONE,
                dnnl_unimplemented);
        REQUIRE(po->alg == MMX_ELTWISE_RELU || po->alg == MMX_ELTWISE_CLIP,
                dnnl_unimplemented);
        *act = po->alg == MMX_ELTWISE_RELU ? ACT_RELU : ACT_CLIP;
        *alpha = po->alpha;
        *beta = po->beta;
    }
    return dnnl_success;
}

/* Images per chunk: as many as keep the transformed tiles (v and m) within
 * this class of CPU's L2, unless the weights are large: the products read
 * all of them once per chunk, so large weights want fewer, larger chunks. */
#define CHUNK_BYTES ((size_t)2 << 20)

static int64_t chunk_images(int64_t n, int64_t points, int64_t tiles, int64_t c,
        int64_t oc) {
    size_t weights = (size_t)(points * c * oc) * sizeof(float);
    size_t budget = weights / 4 > CHUNK_BYTES ? weights / 4 : CHUNK_BYTES;
    for (int64_t k = n; k > 1; k--)
        if (n % k == 0
                && (size_t)(points * k * tiles * (c + oc)) * sizeof(float) <= budget)
            return k;
    return 1;
}

/* The matmul for chunks of `rows` tiles, the weights in its chosen layout. */
static dnnl_status_t create_matmul(wino_conv *wc, dnnl_engine_t engine,
        const_dnnl_primitive_attr_t attr, int64_t rows) {
    const int64_t c = wc->shape.c, k = wc->shape.k;
    const int64_t points = wc->shape.alpha * wc->shape.alpha;
    dnnl_dims_t v = {points, rows, c}, u = {points, c, k}, m = {points, rows, k};
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_V], 3, v, dnnl_f32, dnnl_abc));
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_U], 3, u, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_M], 3, m, dnnl_f32, dnnl_abc));
    CHECK(dnnl_matmul_primitive_desc_create(&wc->pd, engine, wc->mds[MD_V],
            wc->mds[MD_U], NULL, wc->mds[MD_M], attr));
    CHECK(dnnl_primitive_create(&wc->matmul, wc->pd));
    const char *impl = "";
    dnnl_primitive_desc_query(wc->pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(wc->impl, sizeof(wc->impl), "wino_%dx3+%s", wc->shape.m, impl);
    return dnnl_success;
}

dnnl_status_t wino_conv_create(wino_conv **conv, dnnl_engine_t engine,
        const_dnnl_primitive_attr_t attr, const int64_t *src_dims, int64_t oc,
        const int64_t *pad_l, const int64_t *pad_r, int tile, int with_bias,
        int npost, const mmx_post_op *post) {
    const int64_t n = src_dims[0], c = src_dims[1], h = src_dims[2],
                  w = src_dims[3];
    const int64_t oh = h + pad_l[0] + pad_r[0] - 2,
                  ow = w + pad_l[1] + pad_r[1] - 2;
    REQUIRE(n > 0 && c > 0 && oc > 0 && oh > 0 && ow > 0,
            dnnl_invalid_arguments);
    REQUIRE(c % VL == 0 && oc % VL == 0, dnnl_invalid_arguments);
    REQUIRE(tile == 4 || tile == 2, dnnl_invalid_arguments);
    REQUIRE(pad_l[0] >= 0 && pad_l[1] >= 0 && pad_r[0] >= 0 && pad_r[1] >= 0,
            dnnl_invalid_arguments);
    wino_conv *wc = *conv = calloc(1, sizeof(wino_conv));
    REQUIRE(wc != NULL, dnnl_out_of_memory);
    PASS(parse_post_ops(&wc->post, npost, post));
    wc->shape = (wino_shape){.m = tile, .alpha = tile + 2, .c = c, .h = h,
            .w = w, .k = oc, .oh = oh, .ow = ow, .pad_t = pad_l[0],
            .pad_l = pad_l[1], .tiles_h = (oh + tile - 1) / tile,
            .tiles_w = (ow + tile - 1) / tile};
    wc->with_bias = with_bias;
    const int64_t tiles = wc->shape.tiles_h * wc->shape.tiles_w;
    wc->batch = n;
    const int64_t points = (int64_t)wc->shape.alpha * wc->shape.alpha;
    wc->images = chunk_images(n, points, tiles, c, oc);
    const int64_t rows = wc->images * tiles;
    wc->v_size = cache_lines((size_t)(points * rows * c) * sizeof(float));
    wc->m_size = cache_lines((size_t)(points * rows * oc) * sizeof(float));
    PASS(create_matmul(wc, engine, attr, rows));

    /* The convolution's own arguments: src and dst NHWC. */
    dnnl_dims_t src_d = {n, c, h, w}, dst_d = {n, oc, oh, ow}, bias_d = {oc};
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_SRC], 4, src_d, dnnl_f32, dnnl_acdb));
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_BIAS], 1, bias_d, dnnl_f32, dnnl_a));
    CHECK(dnnl_memory_desc_create_with_tag(
            &wc->mds[MD_DST], 4, dst_d, dnnl_f32, dnnl_acdb));
    return dnnl_success;
}

void wino_conv_destroy(wino_conv *wc) {
    if (!wc) return;
    if (wc->matmul) dnnl_primitive_destroy(wc->matmul);
    if (wc->pd) dnnl_primitive_desc_destroy(wc->pd);
    for (int i = 0; i < NUM_MDS; i++)
        if (wc->mds[i]) dnnl_memory_desc_destroy(wc->mds[i]);
    free(wc);
}

int wino_conv_args(const wino_conv *wc, int *args,
        const_dnnl_memory_desc_t *mds) {
    int k = 0;
    args[k] = DNNL_ARG_SRC;
    mds[k++] = wc->mds[MD_SRC];
    /* The weights arrive already in the Winograd domain, in the matmul's layout. */
    args[k] = DNNL_ARG_WEIGHTS;
    mds[k++] = dnnl_primitive_desc_query_md(wc->pd, dnnl_query_weights_md, 0);
    if (wc->with_bias) {
        args[k] = DNNL_ARG_BIAS;
        mds[k++] = wc->mds[MD_BIAS];
    }
    args[k] = DNNL_ARG_DST;
    mds[k++] = wc->mds[MD_DST];
    return k;
}

const char *wino_conv_impl(const wino_conv *wc) {
    return wc->impl;
}

static const_dnnl_memory_desc_t matmul_md(const wino_conv *wc,
        dnnl_query_t what) {
    return dnnl_primitive_desc_query_md(wc->pd, what, 0);
}

size_t wino_conv_scratchpad_size(const wino_conv *wc) {
    return wc->v_size + wc->m_size
            + dnnl_memory_desc_get_size(matmul_md(wc, dnnl_query_scratchpad_md));
}

/* ---- the plan step ---- */

struct wino_step {
    const wino_conv *conv;
    dnnl_memory_t mems[3]; /* v, m, the matmul's scratchpad */
    int nargs;
    dnnl_exec_arg_t args[4]; /* the matmul's */
};

/* The matmul's arguments: v, m and its own scratchpad one after another
 * in the plan's scratchpad; the weights are the step's (the weight cache's
 * memory). */
dnnl_status_t wino_step_create(wino_step **step, const wino_conv *wc,
        dnnl_engine_t engine, void *scratch, dnnl_memory_t weights) {
    wino_step *ws = *step = calloc(1, sizeof(wino_step));
    REQUIRE(ws != NULL, dnnl_out_of_memory);
    ws->conv = wc;
    char *base = scratch;
    const_dnnl_memory_desc_t s_md = matmul_md(wc, dnnl_query_scratchpad_md);
    CHECK(dnnl_memory_create(
            &ws->mems[0], matmul_md(wc, dnnl_query_src_md), engine, base));
    CHECK(dnnl_memory_create(&ws->mems[1], matmul_md(wc, dnnl_query_dst_md),
            engine, base + wc->v_size));
    int k = 0;
    ws->args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ws->mems[0]};
    ws->args[k++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, weights};
    ws->args[k++] = (dnnl_exec_arg_t){DNNL_ARG_DST, ws->mems[1]};
    if (dnnl_memory_desc_get_size(s_md) > 0) {
        CHECK(dnnl_memory_create(&ws->mems[2], s_md, engine,
                base + wc->v_size + wc->m_size));
        ws->args[k++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, ws->mems[2]};
    }
    ws->nargs = k;
    return dnnl_success;
}

void wino_step_destroy(wino_step *ws) {
    if (!ws) return;
    for (int i = 0; i < 3; i++)
        if (ws->mems[i]) dnnl_memory_destroy(ws->mems[i]);
    free(ws);
}

/* Per chunk of images: input transform, the alpha^2 products, output transform
 * (with bias and post-ops) into dst. */
dnnl_status_t wino_step_run(const wino_step *ws, dnnl_stream_t stream,
        const dnnl_exec_arg_t *args) {
    const wino_conv *wc = ws->conv;
    const wino_shape *sh = &wc->shape;
    void *src, *dst, *bias = NULL, *v, *m;
    CHECK(dnnl_memory_get_data_handle(args[0].memory, &src));
    CHECK(dnnl_memory_get_data_handle(args[wc->with_bias ? 3 : 2].memory, &dst));
    if (wc->with_bias)
        CHECK(dnnl_memory_get_data_handle(args[2].memory, &bias));
    CHECK(dnnl_memory_get_data_handle(ws->mems[0], &v));
    CHECK(dnnl_memory_get_data_handle(ws->mems[1], &m));
    const int64_t in_image = sh->h * sh->w * sh->c,
                  out_image = sh->oh * sh->ow * sh->k;
    for (int64_t n0 = 0; n0 < wc->batch; n0 += wc->images) {
        input_transform(sh, (const float *)src + n0 * in_image, wc->images, v);
        CHECK(dnnl_primitive_execute(wc->matmul, stream, ws->nargs, ws->args));
        output_transform(sh, m, wc->images, bias, &wc->post,
                (float *)dst + n0 * out_image);
    }
    return dnnl_success;
}
