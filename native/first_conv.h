/* A CNN's first convolution, quantized on the way out: 3x3, stride 2,
 * padding 1, from a three-channel NCHW float32 input (a batch of RGB images)
 * straight to NHWC uint8 or int8 - a kernel of minimx's own (own_kernel.h).
 *
 * In an INT8 MobileNet (MXNet's quantize_model_mkldnn leaves this layer in
 * float32) oneDNN 3.2 takes three steps for it: the input reordered to NHWC,
 * the float32 convolution, and its output quantized by a binary multiply
 * (oneDNN has no float32 convolution with an integer dst). Here each output
 * row is one task: 8 output pixels by 32 channels in 16 registers, the 27
 * taps as broadcast multiply-adds, read from the three planes directly (the
 * rows a few output rows ahead prefetched: an image coming from memory); then
 * the activation's bounds, the quantizing scale, rounding half to even and
 * saturation, as the three steps do. The float32 sums are in tap order
 * (channel, row, column), starting from the bias: the same values as
 * oneDNN's but for the last bit of a few, which can move a quantized value
 * by one where it lies on a rounding boundary.
 *
 * Not part of the cffi surface; include after oneapi/dnnl/dnnl.h and
 * own_kernel.h.
 */
#ifndef MINIMX_FIRST_CONV_H
#define MINIMX_FIRST_CONV_H

#include <stdint.h>

/* Whether this build has the kernel (the CPU building it has AVX-512). */
int first_conv_available(void);
/* src_dims (N, 3, H, W); oc output channels, a multiple of 16; each output
 * is min(max(conv + bias, lo), hi) * scale, rounded and saturated to u8 (or
 * s8 with dst_s8). Arguments: src (abcd f32), weights (27, oc) f32 (tap
 * (c * 3 + ky) * 3 + kx, then output channel), bias (oc) f32, dst (acdb).
 * *kernel is set before anything can fail, so that a failed create leaves it
 * for own_kernel_destroy. */
dnnl_status_t first_conv_create(own_kernel **kernel, const int64_t *src_dims, int64_t oc,
        float lo, float hi, float scale, int dst_s8);

#endif
