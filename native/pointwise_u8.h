/* INT8 1x1 convolution, stride 1, no padding: a kernel of minimx's own
 * (own_kernel.h).
 *
 * MobileNet v2's expansions (16 to 160 input channels to six times as
 * many) spend much of their time requantizing: each output takes K / 4
 * `vpdpbusd` lanes and a float32 requantization of its own. oneDNN 3.2's
 * `brgconv_1x1` runs those of 16 to 32 input channels at a fifth of the
 * VNNI peak. Here a tile of four pixels by 64 channels sums in 16
 * registers, and the saturating packs narrow four vectors to one store of
 * 64 bytes, the weights' channels placed in the order the packs leave them.
 *
 * The integers are the numpy kernel's, as depthwise_u8.h's: acc = sum of
 * u8 or s8 data times s8 weights (int32, exact), y = (float(acc) + float(bias)) *
 * factor[c] in float32, max(y, 0) where relu, then rounded half to even and
 * saturated to u8 or s8 (NaN, from an infinite factor, as the numpy kernel's
 * `saturate`: 127 in s8, 0 in u8).
 *
 * Data are NHWC (oneDNN's acdb); input channels a multiple of 4 up to 32,
 * or of 32 up to PW8_MAX_K; output channels a multiple of 16. The weights
 * come as (OC / 16, K / 4, 64) s8: a vector of 16 output channels after
 * another, each with all its input channels, four input channels of an
 * output channel a lane; the output channels of each whole group of 64 in
 * the packs' order, as are the bias and factor
 * (minimx/onednn/pointwise.py, `pw8_order`). Not part of the cffi surface;
 * include after oneapi/dnnl/dnnl.h and own_kernel.h.
 */
#ifndef MINIMX_POINTWISE_U8_H
#define MINIMX_POINTWISE_U8_H

#include <stddef.h>
#include <stdint.h>

#define PW8_MAX_K 1024   /* input channels */

/* Whether this build has the kernel (the CPU building it has AVX512-VNNI). */
int pw8_available(void);
/* src_dims (N, K, H, W), s8 with src_s8 (else u8); oc output channels;
 * dst_s8: s8 output, else u8.
 * Arguments: src, weights, [bias], factor (post-op 0's src1), dst. *kernel
 * is set before anything can fail, so that a failed create leaves it for
 * own_kernel_destroy. */
dnnl_status_t pw8_conv_create(own_kernel **kernel, const int64_t *src_dims, int src_s8,
        int64_t oc, int with_bias, int relu, int dst_s8);

#endif
