/* Winograd F(4x4, 3x3) transforms for minimx's Winograd convolution step.
 *
 * A 3x3, stride-1 convolution computes each 4x4 output tile from a 6x6
 * input tile with 36 products per channel pair instead of 144 (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2015):
 *
 *     Y = A^T [ sum_c (G g G^T)_(k,c) * (B^T d B)_c ] A
 *
 * The sum over channels is 36 independent matrix products (one per point of
 * the 6x6 transformed tile), which oneDNN's matmul computes; these two
 * functions do the transforms around it. Data is NHWC (oneDNN's acdb) and
 * the transformed tensors are [36][tiles][channels], so every inner loop
 * runs over contiguous channels. Channel counts must be multiples of
 * WINO_VL. Not part of the cffi surface: only minimx_dnnl.c includes it.
 */
#ifndef MINIMX_WINOGRAD_H
#define MINIMX_WINOGRAD_H

#include <stdint.h>

#define WINO_VL 16 /* channels per vector step: one AVX-512 register */

typedef struct {
    int64_t c, h, w;       /* input channels and size (per image) */
    int64_t k, oh, ow;     /* output channels and size */
    int64_t pad_t, pad_l;  /* top and left zero padding */
    int64_t tiles_h, tiles_w; /* ceil(oh / 4), ceil(ow / 4) */
} wino_shape;

/* What follows the product: dst = post_act(act(y + bias) + sum_scale * dst).
 * An activation is leaky relu (slope alpha; alpha 0 is relu) or clip to
 * [alpha, beta]; WINO_ACT_NONE skips it. */
enum { WINO_ACT_NONE = 0, WINO_ACT_RELU = 1, WINO_ACT_CLIP = 2 };

typedef struct {
    int act;
    float act_alpha, act_beta;
    int sum;
    float sum_scale;
    int post_act;
    float post_alpha, post_beta;
} wino_post;

/* v[36][nimg * T][c] from `nimg` NHWC images at src (T = tiles per image). */
void wino_input_transform(const wino_shape *s, const float *src, int64_t nimg,
        float *v);

/* `nimg` NHWC images at dst from m[36][nimg * T][k]; bias may be NULL. */
void wino_output_transform(const wino_shape *s, const float *m, int64_t nimg,
        const float *bias, const wino_post *post, float *dst);

#endif
