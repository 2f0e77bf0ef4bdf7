/* A three-channel NCHW float32 input (a batch of RGB images) written NHWC,
 * in float32 or bfloat16: a kernel of minimx's own (own_kernel.h).
 *
 * A CNN's first convolution reads its input in NHWC once the rest of the
 * network runs in it (INT8, bfloat16, and float32 at large batches), and
 * oneDNN 3.2's reorder for that three-channel transposition goes one
 * channel at a time (see minimx/onednn/nhwc.py). Here each 16 pixels
 * of the three planes are loaded as three vectors and interleaved by two
 * permutes per 16 outputs. bfloat16 is rounded to nearest even, as
 * ml_dtypes rounds (NaN stays NaN, quiet).
 *
 * Not part of the cffi surface; include after oneapi/dnnl/dnnl.h and
 * own_kernel.h.
 */
#ifndef MINIMX_NHWC_INPUT_H
#define MINIMX_NHWC_INPUT_H

#include <stdint.h>

/* Whether this build has the kernel (the CPU building it has AVX-512). */
int nhwc_input_available(void);
/* dims (N, 3, H, W); dst_dt dnnl_f32 or dnnl_bf16. Arguments: src (abcd,
 * f32), dst (acdb). *kernel is set before anything can fail, so that a
 * failed create leaves it for own_kernel_destroy. */
dnnl_status_t nhwc_input_create(own_kernel **kernel, const int64_t *dims,
        dnnl_data_type_t dst_dt);

#endif
