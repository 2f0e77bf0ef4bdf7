/* What every kernel of minimx's own shares (see own_kernel.h). */
#include <stdlib.h>

#include "oneapi/dnnl/dnnl.h"

#include "shim.h"
#include "own_kernel.h"

dnnl_status_t own_kernel_new(own_kernel **kernel, size_t size, const own_kernel_ops *ops) {
    *kernel = calloc(1, size);
    REQUIRE(*kernel != NULL, dnnl_out_of_memory);
    (*kernel)->ops = ops;
    return dnnl_success;
}

dnnl_status_t own_kernel_arg(own_kernel *k, int arg, int ndims,
        const int64_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    REQUIRE(k->nargs < OWN_MAX_ARGS, dnnl_invalid_arguments);
    CHECK(dnnl_memory_desc_create_with_tag(&k->mds[k->nargs], ndims, dims, dt, tag));
    k->args[k->nargs++] = arg;
    return dnnl_success;
}

dnnl_status_t own_kernel_requantized_args(own_kernel *k, const int64_t *dst_dims,
        int with_bias, int dst_s8) {
    const dnnl_dims_t channels = {dst_dims[1]}, factor = {1, dst_dims[1], 1, 1};
    if (with_bias) PASS(own_kernel_arg(k, DNNL_ARG_BIAS, 1, channels, dnnl_f32, dnnl_a));
    PASS(own_kernel_arg(k, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, 4, factor,
            dnnl_f32, dnnl_acdb));
    return own_kernel_arg(k, DNNL_ARG_DST, 4, dst_dims, dst_s8 ? dnnl_s8 : dnnl_u8, dnnl_acdb);
}

dnnl_status_t own_kernel_handles(const own_kernel *k,
        const dnnl_exec_arg_t *args, void **ptr) {
    for (int i = 0; i < k->nargs; i++)
        CHECK(dnnl_memory_get_data_handle(args[i].memory, &ptr[i]));
    return dnnl_success;
}

size_t own_kernel_scratchpad_size(const own_kernel *k) {
    return k->ops->scratchpad_size ? k->ops->scratchpad_size(k) : 0;
}

void own_kernel_destroy(own_kernel *k) {
    if (!k) return;
    for (int i = 0; i < k->nargs; i++) dnnl_memory_desc_destroy(k->mds[i]);
    free(k);
}
