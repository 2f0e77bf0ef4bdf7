/* A 1x1 convolution, the 3x3 depthwise convolution that reads it and,
 * optionally, the linear 1x1 projection that reads that, in one pass: a
 * kernel of minimx's own (own_kernel.h).
 *
 * MobileNet v2's inverted-residual blocks expand a few channels six-fold
 * with a 1x1 convolution, then filter each channel with a 3x3 depthwise
 * one. At 112x112 and 56x56 the expanded tensor (up to 4.8 MB an image) is
 * written to memory by one oneDNN primitive and read back by the next, and
 * both run far below the FMA peak. Here the expanded rows never leave the
 * cache: each task takes a band of output rows and a group of 16-channel
 * blocks of the expanded tensor, keeps the three expanded rows the next
 * output row reads in a ring (each computed once, but for a band's first),
 * and filters them while they are there; with the projection (a whole
 * inverted-residual block), it projects each filtered row too, adding the
 * block's input where the block has a residual.
 *
 * Float32, oneDNN's nChw16c layout (aBcd16b) for src and dst. The 1x1
 * convolution takes any number of input channels and writes oc, a multiple
 * of 16; the depthwise one has stride 1 or 2 and padding 1. Each applies
 * its bias and then clamps to [lo, hi] (relu or clip: relu6 in MobileNet
 * v2), NaN becoming lo as relu and clip give it on the numpy path, or not
 * at all ((-inf, inf): none, NaN kept); the projection adds its bias and
 * the residual. Sums start from the bias and take the input channels (then
 * the taps, row by row) in order.
 *
 * Not part of the cffi surface; include after oneapi/dnnl/dnnl.h and
 * own_kernel.h.
 */
#ifndef MINIMX_POINTWISE_DEPTHWISE_H
#define MINIMX_POINTWISE_DEPTHWISE_H

#include <stdint.h>

/* Whether this build has the kernel (the CPU building it has AVX-512). */
int pwdw_available(void);
/* src_dims (N, C, H, W); oc channels out of the 1x1 convolution (a multiple
 * of 16); stride of the depthwise one (1 or 2); pc channels out of the
 * projection (0: none), with sum adding src to them (pc == C, stride 1);
 * lo[0], hi[0] the 1x1 convolution's bounds, lo[1], hi[1] the depthwise
 * one's. Arguments: src (aBcd16b), weights (C, oc), bias (oc), the
 * depthwise weights (oc / 16, 9, 16: per block of 16 channels, tap (row * 3
 * + column), then channel) and bias (oc) as oneDNN's depthwise post-op
 * arguments, [the projection's weights (oc, PC) and bias (PC) as post-op
 * 1's, PC being pc rounded up to whole blocks, the columns past pc zero],
 * dst (N, pc or oc, OH, OW) aBcd16b. *kernel is set before anything can
 * fail, so that a failed create leaves it for own_kernel_destroy. */
dnnl_status_t pwdw_conv_create(own_kernel **kernel, const int64_t *src_dims, int64_t oc,
        int64_t stride, int64_t pc, int sum, const float *lo, const float *hi);

#endif
