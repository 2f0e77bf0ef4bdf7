/* INT8 depthwise 3x3 convolution, stride 1 or 2, zero padding 1: a kernel
 * of minimx's own (own_kernel.h).
 *
 * MXNet's quantized depthwise convolution on uint8 data, with the numpy
 * kernel's integers: acc = sum of u8 data times s8 weights (int32, exact),
 * y = (float(acc) + float(bias)) * factor[c] in float32, max(y, 0) where
 * relu, then rounded half to even and saturated to u8 or s8 (see
 * minimx/onednn/depthwise.py for what it gains over oneDNN's `brdgmm_dw`).
 *
 * Data are NHWC (oneDNN's acdb); channels must be multiples of 16, and of
 * 64 at stride 2. The weights come as (3, C, 4) s8: for kernel row k
 * and channel c, the row's three taps and a zero, so that one `vpdpbusd`
 * lane multiplies a kernel row. Not part of the cffi surface; include after
 * oneapi/dnnl/dnnl.h and own_kernel.h.
 */
#ifndef MINIMX_DEPTHWISE_U8_H
#define MINIMX_DEPTHWISE_U8_H

#include <stddef.h>
#include <stdint.h>

/* Whether this build has the kernel (the CPU building it has AVX512-VNNI). */
int dw8_available(void);
/* src_dims (N, C, H, W); stride 1 or 2; dst_s8: s8 output, else u8.
 * Arguments: src, weights, [bias], factor (post-op 0's src1), dst. *kernel
 * is set before anything can fail, so that a failed create leaves it for
 * own_kernel_destroy. */
dnnl_status_t dw8_conv_create(own_kernel **kernel, const int64_t *src_dims, int stride,
        int with_bias, int relu, int dst_s8);

#endif
