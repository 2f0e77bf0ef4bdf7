/* A plan step computed by a kernel of minimx's own instead of a oneDNN
 * primitive: the INT8 depthwise convolution (depthwise_u8.h), the INT8 1x1
 * convolution (pointwise_u8.h), the
 * conversion of a three-channel NCHW input to NHWC (nhwc_input.h), a
 * first convolution quantized on the way out (first_conv.h), and a 1x1
 * convolution with the depthwise one that reads it (pointwise_depthwise.h).
 * (Winograd, winograd.h, is a kind apart: it wraps a oneDNN matmul that each
 * plan step binds.)
 *
 * Each kernel's struct starts with an own_kernel, which says what the shim
 * needs to know: the arguments and their layouts, the implementation's name,
 * the scratchpad it wants and how to run it. The shim keeps one on its
 * mmx_prim and runs it as a plan step, knowing nothing else of it.
 * Not part of the cffi surface; include after oneapi/dnnl/dnnl.h.
 */
#ifndef MINIMX_OWN_KERNEL_H
#define MINIMX_OWN_KERNEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct own_kernel own_kernel;

typedef struct {
    const char *impl;   /* as oneDNN's implementation names: "kernel:isa" */
    /* Bytes of plan scratchpad one run needs; NULL: none. */
    size_t (*scratchpad_size)(const own_kernel *k);
    /* One run; args in the kernel's argument order, scratch as sized. */
    dnnl_status_t (*run)(const own_kernel *k, void *scratch,
            const dnnl_exec_arg_t *args);
} own_kernel_ops;

#define OWN_MAX_ARGS 8

struct own_kernel {
    const own_kernel_ops *ops;
    int nargs;
    int args[OWN_MAX_ARGS];                   /* DNNL_ARG_* kinds */
    dnnl_memory_desc_t mds[OWN_MAX_ARGS];     /* their layouts, owned */
};

/* A zeroed kernel struct of `size` bytes (its own_kernel first) running
 * `ops`, set in *kernel before anything can fail, so that a failed create
 * leaves it for own_kernel_destroy. */
dnnl_status_t own_kernel_new(own_kernel **kernel, size_t size, const own_kernel_ops *ops);
/* Appends argument `arg`: a dense tensor of `dims` in layout `tag`. */
dnnl_status_t own_kernel_arg(own_kernel *k, int arg, int ndims,
        const int64_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag);
/* Appends what minimx's INT8 convolutions take after src and weights:
 * [bias] f32 (C), the requantizing factor f32 (1, C, 1, 1) as post-op 0's
 * src1, and dst of dst_dims (N, C, H, W), u8 (s8 with dst_s8), all NHWC. */
dnnl_status_t own_kernel_requantized_args(own_kernel *k, const int64_t *dst_dims,
        int with_bias, int dst_s8);
/* The data addresses of a run's arguments, in the kernel's order. */
dnnl_status_t own_kernel_handles(const own_kernel *k,
        const dnnl_exec_arg_t *args, void **ptr);
size_t own_kernel_scratchpad_size(const own_kernel *k);
/* Frees the descriptors and the kernel's struct (allocated with calloc). */
void own_kernel_destroy(own_kernel *k);

#endif
