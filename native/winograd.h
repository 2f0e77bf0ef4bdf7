/* Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution, the shim's one step
 * that is not a single oneDNN primitive.
 *
 * A 3x3, stride-1 convolution computes each 4x4 output tile from a 6x6
 * input tile with 36 products per channel pair instead of 144 (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2015), or each
 * 2x2 tile from a 4x4 one with 16 instead of 36:
 *
 *     Y = A^T [ sum_c (G g G^T)_(k,c) * (B^T d B)_c ] A
 *
 * The sum over channels is alpha^2 independent matrix products (one per
 * point of the alpha x alpha transformed tile), which a oneDNN matmul
 * computes; winograd.c does
 * the data transforms around it, over the batch in chunks of images. The
 * weight transform (G) runs once, in Python, when the weight cache fills.
 *
 * The shim (minimx_dnnl.c) keeps a wino_conv on the mmx_prim that
 * mmx_wino_conv_init builds and a wino_step on each plan step that runs it;
 * all else about Winograd is in winograd.c. Not part of the cffi surface.
 * Include after oneapi/dnnl/dnnl.h and minimx_dnnl.h.
 */
#ifndef MINIMX_WINOGRAD_H
#define MINIMX_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct wino_conv wino_conv;
typedef struct wino_step wino_step;

/* Execution arguments of a Winograd convolution: src, weights, [bias], dst. */
#define WINO_MAX_ARGS 4

/* The convolution mmx_wino_conv_init describes (minimx_dnnl.h); its matmul
 * is created with `attr`. *conv is set before anything can fail, so a
 * failed create leaves a half-built object for wino_conv_destroy. */
dnnl_status_t wino_conv_create(wino_conv **conv, dnnl_engine_t engine,
        const_dnnl_primitive_attr_t attr, const int64_t *src_dims, int64_t oc,
        const int64_t *pad_l, const int64_t *pad_r, int tile, int with_bias,
        int npost, const mmx_post_op *post);
void wino_conv_destroy(wino_conv *conv);
/* Writes the argument kinds and layouts (owned by conv) into args and mds,
 * at most WINO_MAX_ARGS of each; returns how many. */
int wino_conv_args(const wino_conv *conv, int *args,
        const_dnnl_memory_desc_t *mds);
/* "wino_4x3+" or "wino_2x3+", and the matmul's implementation. */
const char *wino_conv_impl(const wino_conv *conv);
/* Bytes of plan scratchpad: the transformed tiles and the matmul's own. */
size_t wino_conv_scratchpad_size(const wino_conv *conv);

/* A plan step running conv over a scratchpad of wino_conv_scratchpad_size
 * bytes, with the weights in `weights` (the step's weights memory). *step
 * is set before anything can fail, as for wino_conv_create. */
dnnl_status_t wino_step_create(wino_step **step, const wino_conv *conv,
        dnnl_engine_t engine, void *scratch, dnnl_memory_t weights);
void wino_step_destroy(wino_step *step);
/* One run; args are the step's, in wino_conv_args's order. */
dnnl_status_t wino_step_run(const wino_step *step, dnnl_stream_t stream,
        const dnnl_exec_arg_t *args);

#endif
