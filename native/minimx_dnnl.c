/* minimx's C shim over the oneDNN v3 C API (see minimx_dnnl.h).
 *
 * Two jobs: build primitives from plain descriptions (one short, linear
 * story per primitive, as in oneDNN's examples), and run a whole plan of
 * primitives in one call, so that a subgraph costs Python one call per run.
 *
 * Errors never exit: CHECK returns the failing status to the caller and
 * leaves the call text and dnnl_status2str() in a thread-local buffer that
 * Python turns into a BackendError (shim.h). Every handle a story creates
 * lives on the object being built, so an early return leaks nothing.
 * Winograd convolutions are built and run by winograd.c, and the kernels
 * of minimx's own (own_kernel.h: depthwise_u8.c, pointwise_u8.c,
 * nhwc_input.c, first_conv.c, pointwise_depthwise.c) by theirs;
 * here each is one more kind of primitive and of plan step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl_debug.h"

#include "minimx_dnnl.h"
#include "shim.h"
#include "winograd.h"
#include "own_kernel.h"
#include "depthwise_u8.h"
#include "pointwise_u8.h"
#include "nhwc_input.h"
#include "first_conv.h"
#include "pointwise_depthwise.h"

/* ---- errors ---- */

static _Thread_local char last_error[512];

dnnl_status_t mmx_fail(dnnl_status_t status, const char *what) {
    snprintf(last_error, sizeof(last_error), "%s: %s", what,
            dnnl_status2str(status));
    return status;
}

const char *mmx_last_error(void) {
    return last_error;
}

/* The header's enums restate oneDNN values so that cffi can read them. */
#define SAME_VALUE(ours, theirs) \
    _Static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs)

SAME_VALUE(MMX_ARG_SRC, DNNL_ARG_SRC);
SAME_VALUE(MMX_ARG_SRC_1, DNNL_ARG_SRC_1);
SAME_VALUE(MMX_ARG_DST, DNNL_ARG_DST);
SAME_VALUE(MMX_ARG_WEIGHTS, DNNL_ARG_WEIGHTS);
SAME_VALUE(MMX_ARG_BIAS, DNNL_ARG_BIAS);
SAME_VALUE(MMX_ARG_MEAN, DNNL_ARG_MEAN);
SAME_VALUE(MMX_ARG_VARIANCE, DNNL_ARG_VARIANCE);
SAME_VALUE(MMX_ARG_SCALE, DNNL_ARG_SCALE);
SAME_VALUE(MMX_ARG_SHIFT, DNNL_ARG_SHIFT);
SAME_VALUE(MMX_ARG_MULTIPLE_SRC, DNNL_ARG_MULTIPLE_SRC);
SAME_VALUE(MMX_ARG_ATTR_SCALES, DNNL_ARG_ATTR_SCALES);
SAME_VALUE(MMX_ARG_POST_OP_DW, DNNL_ARG_ATTR_POST_OP_DW);
SAME_VALUE(MMX_ARG_POST_OP_BASE, DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE);
SAME_VALUE(MMX_DTYPE_UNDEF, dnnl_data_type_undef);
SAME_VALUE(MMX_BF16, dnnl_bf16);
SAME_VALUE(MMX_F32, dnnl_f32);
SAME_VALUE(MMX_S32, dnnl_s32);
SAME_VALUE(MMX_S8, dnnl_s8);
SAME_VALUE(MMX_U8, dnnl_u8);
SAME_VALUE(MMX_ELTWISE_RELU, dnnl_eltwise_relu);
SAME_VALUE(MMX_ELTWISE_TANH, dnnl_eltwise_tanh);
SAME_VALUE(MMX_ELTWISE_ELU, dnnl_eltwise_elu);
SAME_VALUE(MMX_ELTWISE_SQUARE, dnnl_eltwise_square);
SAME_VALUE(MMX_ELTWISE_ABS, dnnl_eltwise_abs);
SAME_VALUE(MMX_ELTWISE_SQRT, dnnl_eltwise_sqrt);
SAME_VALUE(MMX_ELTWISE_LINEAR, dnnl_eltwise_linear);
SAME_VALUE(MMX_ELTWISE_SOFT_RELU, dnnl_eltwise_soft_relu);
SAME_VALUE(MMX_ELTWISE_LOGISTIC, dnnl_eltwise_logistic);
SAME_VALUE(MMX_ELTWISE_EXP, dnnl_eltwise_exp);
SAME_VALUE(MMX_ELTWISE_GELU_TANH, dnnl_eltwise_gelu_tanh);
SAME_VALUE(MMX_ELTWISE_SWISH, dnnl_eltwise_swish);
SAME_VALUE(MMX_ELTWISE_LOG, dnnl_eltwise_log);
SAME_VALUE(MMX_ELTWISE_CLIP, dnnl_eltwise_clip);
SAME_VALUE(MMX_ELTWISE_GELU_ERF, dnnl_eltwise_gelu_erf);
SAME_VALUE(MMX_ELTWISE_ROUND, dnnl_eltwise_round);
SAME_VALUE(MMX_POOLING_MAX, dnnl_pooling_max);
SAME_VALUE(MMX_POOLING_AVG_INCLUDE_PADDING, dnnl_pooling_avg_include_padding);
SAME_VALUE(MMX_POOLING_AVG_EXCLUDE_PADDING, dnnl_pooling_avg_exclude_padding);
SAME_VALUE(MMX_LRN_ACROSS_CHANNELS, dnnl_lrn_across_channels);
SAME_VALUE(MMX_RESAMPLING_NEAREST, dnnl_resampling_nearest);
SAME_VALUE(MMX_RESAMPLING_LINEAR, dnnl_resampling_linear);
SAME_VALUE(MMX_BINARY_ADD, dnnl_binary_add);
SAME_VALUE(MMX_BINARY_MUL, dnnl_binary_mul);
SAME_VALUE(MMX_BINARY_MAX, dnnl_binary_max);
SAME_VALUE(MMX_BINARY_MIN, dnnl_binary_min);
SAME_VALUE(MMX_BINARY_DIV, dnnl_binary_div);
SAME_VALUE(MMX_BINARY_SUB, dnnl_binary_sub);
SAME_VALUE(MMX_BINARY_GT, dnnl_binary_gt);
SAME_VALUE(MMX_BINARY_LT, dnnl_binary_lt);
SAME_VALUE(MMX_BINARY_EQ, dnnl_binary_eq);
SAME_VALUE(MMX_REDUCTION_MAX, dnnl_reduction_max);
SAME_VALUE(MMX_REDUCTION_MIN, dnnl_reduction_min);
SAME_VALUE(MMX_SOFTMAX_ACCURATE, dnnl_softmax_accurate);
SAME_VALUE(MMX_SOFTMAX_LOG, dnnl_softmax_log);
SAME_VALUE(MMX_RNN_VANILLA, dnnl_vanilla_rnn);
SAME_VALUE(MMX_RNN_LSTM, dnnl_vanilla_lstm);
SAME_VALUE(MMX_RNN_LBR_GRU, dnnl_lbr_gru);
SAME_VALUE(MMX_RNN_LEFT2RIGHT, dnnl_unidirectional_left2right);
SAME_VALUE(MMX_RNN_BIDIRECTIONAL_CONCAT, dnnl_bidirectional_concat);
SAME_VALUE(MMX_ARG_SRC_ITER_C, DNNL_ARG_SRC_ITER_C);
SAME_VALUE(MMX_ARG_DST_ITER, DNNL_ARG_DST_ITER);
SAME_VALUE(MMX_ARG_DST_ITER_C, DNNL_ARG_DST_ITER_C);
SAME_VALUE(MMX_ARG_WEIGHTS_ITER, DNNL_ARG_WEIGHTS_ITER);

/* ---- library facts ---- */

void mmx_version(int *major, int *minor, int *patch, const char **hash) {
    const dnnl_version_t *v = dnnl_version();
    *major = v->major;
    *minor = v->minor;
    *patch = v->patch;
    *hash = v->hash;
}

const char *mmx_isa(void) {
    return dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
}

/* ---- engine ---- */

int mmx_engine_create(mmx_engine **engine) {
    CHECK(dnnl_engine_create(engine, dnnl_cpu, 0));
    return dnnl_success;
}

/* ---- memory descriptors ---- */

/* The data types minimx's tensors may have (see enum mmx_dtype). */
static int known_dtype(int dtype) {
    return dtype == dnnl_f32 || dtype == dnnl_bf16 || dtype == dnnl_s32
            || dtype == dnnl_s8 || dtype == dnnl_u8;
}

int mmx_md_create_any(mmx_md **md, int ndims, const int64_t *dims, int dtype) {
    REQUIRE(ndims > 0 && ndims <= DNNL_MAX_NDIMS, dnnl_invalid_arguments);
    REQUIRE(known_dtype(dtype), dnnl_invalid_arguments);
    dnnl_dims_t d;
    memcpy(d, dims, sizeof(int64_t) * ndims);
    CHECK(dnnl_memory_desc_create_with_tag(
            md, ndims, d, (dnnl_data_type_t)dtype, dnnl_format_tag_any));
    return dnnl_success;
}

int mmx_md_create_channel_blocked(mmx_md **md, int ndims, const int64_t *dims, int dtype,
        int block) {
    REQUIRE(ndims >= 3 && ndims <= 5 && (block == 8 || block == 16), dnnl_invalid_arguments);
    REQUIRE(known_dtype(dtype), dnnl_invalid_arguments);
    static const dnnl_format_tag_t tags[2][3] = {
            {dnnl_aBc8b, dnnl_aBcd8b, dnnl_aBcde8b},
            {dnnl_aBc16b, dnnl_aBcd16b, dnnl_aBcde16b}};
    dnnl_dims_t d;
    memcpy(d, dims, sizeof(int64_t) * ndims);
    CHECK(dnnl_memory_desc_create_with_tag(
            md, ndims, d, (dnnl_data_type_t)dtype, tags[block == 16][ndims - 3]));
    return dnnl_success;
}

int mmx_md_create_strided(mmx_md **md, int ndims, const int64_t *dims,
        const int64_t *strides, int dtype) {
    REQUIRE(ndims > 0 && ndims <= DNNL_MAX_NDIMS, dnnl_invalid_arguments);
    REQUIRE(known_dtype(dtype), dnnl_invalid_arguments);
    dnnl_dims_t d, s;
    memcpy(d, dims, sizeof(int64_t) * ndims);
    memcpy(s, strides, sizeof(int64_t) * ndims);
    CHECK(dnnl_memory_desc_create_with_strides(
            md, ndims, d, (dnnl_data_type_t)dtype, s));
    return dnnl_success;
}

int mmx_md_permute(mmx_md **md, const mmx_md *existing, const int *perm) {
    CHECK(dnnl_memory_desc_permute_axes(md, existing, perm));
    return dnnl_success;
}

int mmx_md_clone(mmx_md **md, const mmx_md *existing) {
    CHECK(dnnl_memory_desc_clone(md, existing));
    return dnnl_success;
}

void mmx_md_destroy(mmx_md *md) {
    dnnl_memory_desc_destroy(md);
}

int mmx_md_layout(const mmx_md *md, mmx_layout *out) {
    memset(out, 0, sizeof(*out));
    const dnnl_dims_t *dims;
    dnnl_format_kind_t kind;
    dnnl_data_type_t dtype;
    CHECK(dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &out->ndims));
    CHECK(dnnl_memory_desc_query(md, dnnl_query_data_type, &dtype));
    out->dtype = (int)dtype;
    CHECK(dnnl_memory_desc_query(md, dnnl_query_dims, &dims));
    memcpy(out->dims, *dims, sizeof(int64_t) * out->ndims);
    CHECK(dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind));
    out->format_kind = (int)kind;
    out->size = dnnl_memory_desc_get_size(md);
    if (kind != dnnl_blocked) return dnnl_success;

    const dnnl_dims_t *strides, *blks, *idxs;
    CHECK(dnnl_memory_desc_query(md, dnnl_query_strides, &strides));
    CHECK(dnnl_memory_desc_query(
            md, dnnl_query_inner_nblks_s32, &out->inner_nblks));
    CHECK(dnnl_memory_desc_query(md, dnnl_query_inner_blks, &blks));
    CHECK(dnnl_memory_desc_query(md, dnnl_query_inner_idxs, &idxs));
    memcpy(out->strides, *strides, sizeof(int64_t) * out->ndims);
    memcpy(out->inner_blks, *blks, sizeof(int64_t) * out->inner_nblks);
    memcpy(out->inner_idxs, *idxs, sizeof(int64_t) * out->inner_nblks);
    return dnnl_success;
}

int mmx_md_equal(const mmx_md *a, const mmx_md *b) {
    return dnnl_memory_desc_equal(a, b);
}

/* ---- memory objects ---- */

int mmx_memory_create(mmx_memory **mem, mmx_engine *engine, const mmx_md *md,
        void *handle, int allocate) {
    CHECK(dnnl_memory_create(
            mem, md, engine, allocate ? DNNL_MEMORY_ALLOCATE : handle));
    return dnnl_success;
}

void mmx_memory_destroy(mmx_memory *mem) {
    dnnl_memory_destroy(mem);
}

int mmx_memory_set_handle(mmx_memory *mem, void *handle) {
    CHECK(dnnl_memory_set_data_handle(mem, handle));
    return dnnl_success;
}

/* ---- primitives ---- */

struct mmx_prim {
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t post_ops;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t primitive;
    int nargs;
    int *args;
    const_dnnl_memory_desc_t *arg_mds; /* owned by pd, wino, own or scale_mds */
    wino_conv *wino; /* a Winograd convolution instead of a primitive */
    own_kernel *own; /* a kernel of minimx's own instead of a primitive */
    int scale_masks[3]; /* per SCALED_ARGS entry: a mask, or -1 */
    dnnl_memory_desc_t scale_mds[3];
    char avoid[64]; /* implementations whose name contains it are passed over */
};

/* The arguments that may carry scales, in the order of mmx_scales. */
static const int SCALED_ARGS[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};

mmx_prim *mmx_prim_new(void) {
    return calloc(1, sizeof(mmx_prim));
}

void mmx_prim_destroy(mmx_prim *prim) {
    if (!prim) return;
    if (prim->primitive) dnnl_primitive_destroy(prim->primitive);
    if (prim->pd) dnnl_primitive_desc_destroy(prim->pd);
    if (prim->post_ops) dnnl_post_ops_destroy(prim->post_ops);
    if (prim->attr) dnnl_primitive_attr_destroy(prim->attr);
    wino_conv_destroy(prim->wino);
    own_kernel_destroy(prim->own);
    for (int i = 0; i < 3; i++)
        if (prim->scale_mds[i]) dnnl_memory_desc_destroy(prim->scale_mds[i]);
    free(prim->args);
    free(prim->arg_mds);
    free(prim);
}

int mmx_prim_nargs(const mmx_prim *prim) {
    return prim->nargs;
}

int mmx_prim_arg(const mmx_prim *prim, int index) {
    return prim->args[index];
}

const mmx_md *mmx_prim_arg_md(const mmx_prim *prim, int index) {
    return prim->arg_mds[index];
}

const char *mmx_prim_impl(const mmx_prim *prim) {
    if (prim->wino) return wino_conv_impl(prim->wino);
    if (prim->own) return prim->own->ops->impl;
    const char *impl = "";
    dnnl_primitive_desc_query(prim->pd, dnnl_query_impl_info_str, 0, &impl);
    return impl;
}

int mmx_prim_avoid(mmx_prim *prim, const char *part) {
    REQUIRE(strlen(part) < sizeof(prim->avoid), dnnl_invalid_arguments);
    strcpy(prim->avoid, part);
    return dnnl_success;
}

/* Moves the primitive descriptor past the implementations prim->avoid names. */
static void pass_avoided(mmx_prim *prim) {
    const char *impl = "";
    while (prim->avoid[0]) {
        dnnl_primitive_desc_query(prim->pd, dnnl_query_impl_info_str, 0, &impl);
        if (!strstr(impl, prim->avoid)
                || dnnl_primitive_desc_next_impl(prim->pd) != dnnl_success)
            return;
    }
}

size_t mmx_prim_scratchpad_size(const mmx_prim *prim) {
    if (prim->wino) return wino_conv_scratchpad_size(prim->wino);
    if (prim->own) return own_kernel_scratchpad_size(prim->own);
    return dnnl_memory_desc_get_size(
            dnnl_primitive_desc_query_md(prim->pd, dnnl_query_scratchpad_md, 0));
}

/* The scale masks of the attributes (values come at execution). */
static dnnl_status_t set_scales(mmx_prim *prim, const mmx_scales *scales) {
    const int masks[3] = {scales ? scales->src : -1,
            scales ? scales->weights : -1, scales ? scales->dst : -1};
    for (int i = 0; i < 3; i++) {
        prim->scale_masks[i] = masks[i];
        if (masks[i] < 0) continue;
        CHECK(dnnl_primitive_attr_set_scales_mask(
                prim->attr, SCALED_ARGS[i], masks[i]));
    }
    return dnnl_success;
}

/* Attributes every primitive gets: the scratchpad belongs to the plan
 * (user mode), plus the given scales and post-op chain. */
static dnnl_status_t make_attr(mmx_prim *prim, int npost,
        const mmx_post_op *post, const mmx_scales *scales) {
    REQUIRE(npost >= 0 && npost <= 32, dnnl_invalid_arguments);
    CHECK(dnnl_primitive_attr_create(&prim->attr));
    CHECK(dnnl_primitive_attr_set_scratchpad_mode(
            prim->attr, dnnl_scratchpad_mode_user));
    PASS(set_scales(prim, scales));
    if (npost == 0) return dnnl_success;

    CHECK(dnnl_post_ops_create(&prim->post_ops));
    for (int i = 0; i < npost; i++) {
        const mmx_post_op *po = &post[i];
        switch (po->kind) {
            case MMX_POST_ELTWISE:
                CHECK(dnnl_post_ops_append_eltwise(prim->post_ops,
                        (dnnl_alg_kind_t)po->alg, po->alpha, po->beta));
                break;
            case MMX_POST_SUM:
                REQUIRE(po->dtype == dnnl_data_type_undef
                                || known_dtype(po->dtype),
                        dnnl_invalid_arguments);
                CHECK(dnnl_post_ops_append_sum(prim->post_ops, po->alpha, 0,
                        (dnnl_data_type_t)po->dtype));
                break;
            case MMX_POST_BINARY:
                REQUIRE(po->src1 != NULL, dnnl_invalid_arguments);
                CHECK(dnnl_post_ops_append_binary(prim->post_ops,
                        (dnnl_alg_kind_t)po->alg, po->src1));
                break;
            default: return mmx_fail(dnnl_invalid_arguments, "unknown post-op kind");
        }
    }
    CHECK(dnnl_primitive_attr_set_post_ops(prim->attr, prim->post_ops));
    return dnnl_success;
}

/* The descriptor of the f32 scales of `arg` under `mask`: one value per
 * index of each masked dim of the argument's own descriptor. */
static dnnl_status_t make_scale_md(
        dnnl_memory_desc_t *md, const_dnnl_memory_desc_t arg_md, int mask) {
    int ndims;
    const dnnl_dims_t *dims;
    CHECK(dnnl_memory_desc_query(arg_md, dnnl_query_ndims_s32, &ndims));
    CHECK(dnnl_memory_desc_query(arg_md, dnnl_query_dims, &dims));
    REQUIRE(mask >> ndims == 0, dnnl_invalid_arguments);
    dnnl_dims_t count = {1};
    for (int d = 0; d < ndims; d++)
        if (mask & (1 << d)) count[0] *= (*dims)[d];
    CHECK(dnnl_memory_desc_create_with_tag(md, 1, count, dnnl_f32, dnnl_a));
    return dnnl_success;
}

/* Records the execution arguments (their descriptors are read back from
 * the primitive descriptor, so they carry the layouts it chose) and creates
 * the primitive. Binary post-op operands, then scales, are appended after
 * `args`. */
static dnnl_status_t finish(mmx_prim *prim, int nargs, const int *args) {
    pass_avoided(prim);
    int nextra = 0;
    int npost = prim->post_ops ? dnnl_post_ops_len(prim->post_ops) : 0;
    for (int i = 0; i < npost; i++)
        nextra += dnnl_post_ops_get_kind(prim->post_ops, i) == dnnl_binary;
    for (int i = 0; i < 3; i++) nextra += prim->scale_masks[i] >= 0;

    prim->args = malloc(sizeof(int) * (nargs + nextra));
    prim->arg_mds = malloc(sizeof(*prim->arg_mds) * (nargs + nextra));
    REQUIRE(prim->args && prim->arg_mds, dnnl_out_of_memory);
    memcpy(prim->args, args, sizeof(int) * nargs);
    for (int i = 0; i < npost; i++)
        if (dnnl_post_ops_get_kind(prim->post_ops, i) == dnnl_binary)
            prim->args[nargs++]
                    = DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1;
    for (int i = 0; i < nargs; i++) {
        prim->arg_mds[i] = dnnl_primitive_desc_query_md(
                prim->pd, dnnl_query_exec_arg_md, prim->args[i]);
        REQUIRE(prim->arg_mds[i] != NULL, dnnl_invalid_arguments);
    }
    for (int i = 0; i < 3; i++) {
        if (prim->scale_masks[i] < 0) continue;
        PASS(make_scale_md(&prim->scale_mds[i],
                dnnl_primitive_desc_query_md(
                        prim->pd, dnnl_query_exec_arg_md, SCALED_ARGS[i]),
                prim->scale_masks[i]));
        prim->args[nargs] = DNNL_ARG_ATTR_SCALES | SCALED_ARGS[i];
        prim->arg_mds[nargs++] = prim->scale_mds[i];
    }
    prim->nargs = nargs;
    CHECK(dnnl_primitive_create(&prim->primitive, prim->pd));
    return dnnl_success;
}

/* The arguments of a primitive with weights and an optional bias. */
static dnnl_status_t finish_weighted(mmx_prim *prim, const mmx_md *bias) {
    const int with_bias[] = {
            DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
    const int without_bias[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    return bias ? finish(prim, 4, with_bias) : finish(prim, 3, without_bias);
}

/* Convolution and deconvolution take the same arguments and differ only in
   the primitive descriptor they create. */
static dnnl_status_t conv_like_init(mmx_prim *prim, mmx_engine *engine,
        int deconv, const mmx_md *src, const mmx_md *weights,
        const mmx_md *bias, const mmx_md *dst, const int64_t *strides,
        const int64_t *dilates, const int64_t *pad_l, const int64_t *pad_r,
        int npost, const mmx_post_op *post, const mmx_scales *scales) {
    int nspatial;
    CHECK(dnnl_memory_desc_query(src, dnnl_query_ndims_s32, &nspatial));
    nspatial -= 2;
    REQUIRE(nspatial >= 1 && nspatial <= 3, dnnl_invalid_arguments);
    dnnl_dims_t s, d, pl, pr;
    memcpy(s, strides, sizeof(int64_t) * nspatial);
    memcpy(d, dilates, sizeof(int64_t) * nspatial);
    memcpy(pl, pad_l, sizeof(int64_t) * nspatial);
    memcpy(pr, pad_r, sizeof(int64_t) * nspatial);

    PASS(make_attr(prim, npost, post, scales));
    if (deconv)
        CHECK(dnnl_deconvolution_forward_primitive_desc_create(&prim->pd,
                engine, dnnl_forward_inference, dnnl_deconvolution_direct,
                src, weights, bias, dst, s, d, pl, pr, prim->attr));
    else
        CHECK(dnnl_convolution_forward_primitive_desc_create(&prim->pd,
                engine, dnnl_forward_inference, dnnl_convolution_direct, src,
                weights, bias, dst, s, d, pl, pr, prim->attr));
    return finish_weighted(prim, bias);
}

int mmx_conv_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, int npost, const mmx_post_op *post,
        const mmx_scales *scales) {
    return conv_like_init(prim, engine, 0, src, weights, bias, dst, strides,
            dilates, pad_l, pad_r, npost, post, scales);
}

int mmx_deconv_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, int npost, const mmx_post_op *post) {
    return conv_like_init(prim, engine, 1, src, weights, bias, dst, strides,
            dilates, pad_l, pad_r, npost, post, NULL);
}

int mmx_inner_product_init(mmx_prim *prim, mmx_engine *engine,
        const mmx_md *src, const mmx_md *weights, const mmx_md *bias,
        const mmx_md *dst, int npost, const mmx_post_op *post,
        const mmx_scales *scales) {
    PASS(make_attr(prim, npost, post, scales));
    CHECK(dnnl_inner_product_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, src, weights, bias, dst, prim->attr));
    return finish_weighted(prim, bias);
}

int mmx_matmul_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst, int npost,
        const mmx_post_op *post) {
    PASS(make_attr(prim, npost, post, NULL));
    CHECK(dnnl_matmul_primitive_desc_create(&prim->pd, engine, src, weights,
            bias, dst, prim->attr));
    return finish_weighted(prim, bias);
}

int mmx_layer_norm_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        float epsilon, int use_scale, int use_shift) {
    unsigned flags = 0;
    if (use_scale) flags |= dnnl_use_scale;
    if (use_shift) flags |= dnnl_use_shift;

    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_layer_normalization_forward_primitive_desc_create(&prim->pd,
            engine, dnnl_forward_inference, src, src, NULL, epsilon, flags,
            prim->attr));

    int args[4] = {DNNL_ARG_SRC};
    int nargs = 1;
    if (use_scale) args[nargs++] = DNNL_ARG_SCALE;
    if (use_shift) args[nargs++] = DNNL_ARG_SHIFT;
    args[nargs++] = DNNL_ARG_DST;
    return finish(prim, nargs, args);
}

int mmx_resampling_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst) {
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_resampling_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, (dnnl_alg_kind_t)alg, NULL, src, dst,
            prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_batch_norm_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        float epsilon, int use_scale, int use_shift) {
    unsigned flags = dnnl_use_global_stats;
    if (use_scale) flags |= dnnl_use_scale;
    if (use_shift) flags |= dnnl_use_shift;

    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_batch_normalization_forward_primitive_desc_create(&prim->pd,
            engine, dnnl_forward_inference, src, src, epsilon, flags,
            prim->attr));

    int args[6] = {DNNL_ARG_SRC, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    int nargs = 3;
    if (use_scale) args[nargs++] = DNNL_ARG_SCALE;
    if (use_shift) args[nargs++] = DNNL_ARG_SHIFT;
    args[nargs++] = DNNL_ARG_DST;
    return finish(prim, nargs, args);
}

int mmx_eltwise_init(mmx_prim *prim, mmx_engine *engine, int alg, float alpha,
        float beta, const mmx_md *src) {
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_eltwise_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, (dnnl_alg_kind_t)alg, src, src, alpha,
            beta, prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_pooling_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst, const int64_t *strides,
        const int64_t *kernel, const int64_t *pad_l, const int64_t *pad_r) {
    int nspatial;
    CHECK(dnnl_memory_desc_query(src, dnnl_query_ndims_s32, &nspatial));
    nspatial -= 2;
    REQUIRE(nspatial >= 1 && nspatial <= 3, dnnl_invalid_arguments);
    dnnl_dims_t s, k, pl, pr, no_dilation = {0};
    memcpy(s, strides, sizeof(int64_t) * nspatial);
    memcpy(k, kernel, sizeof(int64_t) * nspatial);
    memcpy(pl, pad_l, sizeof(int64_t) * nspatial);
    memcpy(pr, pad_r, sizeof(int64_t) * nspatial);

    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_pooling_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, (dnnl_alg_kind_t)alg, src, dst, s, k,
            no_dilation, pl, pr, prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_softmax_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, int axis) {
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_softmax_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, (dnnl_alg_kind_t)alg, src, src, axis,
            prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_lrn_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        int64_t local_size, float alpha, float beta, float k) {
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_lrn_forward_primitive_desc_create(&prim->pd, engine,
            dnnl_forward_inference, dnnl_lrn_across_channels, src, src,
            local_size, alpha, beta, k, prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_binary_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src0, const mmx_md *src1, const mmx_md *dst, int npost,
        const mmx_post_op *post) {
    PASS(make_attr(prim, npost, post, NULL));
    CHECK(dnnl_binary_primitive_desc_create(&prim->pd, engine,
            (dnnl_alg_kind_t)alg, src0, src1, dst, prim->attr));

    const int args[] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
    return finish(prim, 3, args);
}

int mmx_reduction_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst) {
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_reduction_primitive_desc_create(&prim->pd, engine,
            (dnnl_alg_kind_t)alg, src, dst, 0.f, 0.f, prim->attr));

    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return finish(prim, 2, args);
}

int mmx_concat_init(mmx_prim *prim, mmx_engine *engine, int n,
        const mmx_md *const *srcs, const mmx_md *dst, int axis) {
    REQUIRE(n >= 1 && n <= 1000, dnnl_invalid_arguments);
    PASS(make_attr(prim, 0, NULL, NULL));
    CHECK(dnnl_concat_primitive_desc_create(
            &prim->pd, engine, dst, n, axis, srcs, prim->attr));

    int *args = malloc(sizeof(int) * (n + 1));
    REQUIRE(args != NULL, dnnl_out_of_memory);
    for (int i = 0; i < n; i++)
        args[i] = DNNL_ARG_MULTIPLE_SRC + i;
    args[n] = DNNL_ARG_DST;
    dnnl_status_t status = finish(prim, n + 1, args);
    free(args);
    return status;
}

int mmx_reorder_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *dst, const mmx_scales *scales) {
    REQUIRE(scales == NULL || scales->weights < 0, dnnl_invalid_arguments);
    PASS(make_attr(prim, 0, NULL, scales));
    CHECK(dnnl_reorder_primitive_desc_create(
            &prim->pd, src, engine, dst, engine, prim->attr));

    const int args[] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    return finish(prim, 2, args);
}

int mmx_rnn_init(mmx_prim *prim, mmx_engine *engine, int cell, int activation,
        int direction, const mmx_md *src_layer, const mmx_md *src_iter,
        const mmx_md *src_iter_c, const mmx_md *weights_layer,
        const mmx_md *weights_iter, const mmx_md *bias, const mmx_md *dst_layer,
        const mmx_md *dst_iter, const mmx_md *dst_iter_c,
        const mmx_rnn_qparams *qparams) {
    REQUIRE(cell == dnnl_lbr_gru || cell == dnnl_vanilla_lstm
                    || cell == dnnl_vanilla_rnn, dnnl_invalid_arguments);
    REQUIRE(cell == dnnl_vanilla_lstm || (!src_iter_c && !dst_iter_c),
            dnnl_invalid_arguments);
    REQUIRE(!qparams || (cell == dnnl_vanilla_lstm && qparams->nscales > 0),
            dnnl_invalid_arguments);
    PASS(make_attr(prim, 0, NULL, NULL));
    if (qparams) {
        /* Per gate row: the weights' dims l, d, i, g, o; the g and o bits. */
        CHECK(dnnl_primitive_attr_set_rnn_data_qparams(
                prim->attr, qparams->data_scale, qparams->data_shift));
        CHECK(dnnl_primitive_attr_set_rnn_weights_qparams(prim->attr,
                qparams->nscales, (1 << 3) | (1 << 4), qparams->weight_scales));
    }
    const dnnl_rnn_direction_t dir = (dnnl_rnn_direction_t)direction;
    if (cell == dnnl_vanilla_lstm)
        CHECK(dnnl_lstm_forward_primitive_desc_create(&prim->pd, engine,
                dnnl_forward_inference, dir, src_layer, src_iter, src_iter_c,
                weights_layer, weights_iter, NULL, NULL, bias, dst_layer,
                dst_iter, dst_iter_c, dnnl_rnn_flags_undef, prim->attr));
    else if (cell == dnnl_lbr_gru)
        CHECK(dnnl_lbr_gru_forward_primitive_desc_create(&prim->pd, engine,
                dnnl_forward_inference, dir, src_layer, src_iter,
                weights_layer, weights_iter, bias, dst_layer, dst_iter,
                dnnl_rnn_flags_undef, prim->attr));
    else
        CHECK(dnnl_vanilla_rnn_forward_primitive_desc_create(&prim->pd,
                engine, dnnl_forward_inference, (dnnl_alg_kind_t)activation,
                dir, src_layer, src_iter, weights_layer, weights_iter, bias,
                dst_layer, dst_iter, dnnl_rnn_flags_undef, 0.f, 0.f,
                prim->attr));

    /* The arguments in the header's order, the optional ones if given. */
    const struct { int arg; const mmx_md *md; } all[] = {
            {DNNL_ARG_SRC_LAYER, src_layer}, {DNNL_ARG_SRC_ITER, src_iter},
            {DNNL_ARG_SRC_ITER_C, src_iter_c},
            {DNNL_ARG_WEIGHTS_LAYER, weights_layer},
            {DNNL_ARG_WEIGHTS_ITER, weights_iter}, {DNNL_ARG_BIAS, bias},
            {DNNL_ARG_DST_LAYER, dst_layer}, {DNNL_ARG_DST_ITER, dst_iter},
            {DNNL_ARG_DST_ITER_C, dst_iter_c}};
    int args[9], nargs = 0;
    for (int i = 0; i < 9; i++)
        if (all[i].md) args[nargs++] = all[i].arg;
    return finish(prim, nargs, args);
}

int mmx_wino_conv_init(mmx_prim *prim, mmx_engine *engine,
        const int64_t *src_dims, int64_t oc, const int64_t *pad_l,
        const int64_t *pad_r, int tile, int with_bias, int npost,
        const mmx_post_op *post) {
    PASS(make_attr(prim, 0, NULL, NULL));
    PASS(wino_conv_create(&prim->wino, engine, prim->attr, src_dims, oc,
            pad_l, pad_r, tile, with_bias, npost, post));
    prim->args = malloc(sizeof(int) * WINO_MAX_ARGS);
    prim->arg_mds = malloc(sizeof(*prim->arg_mds) * WINO_MAX_ARGS);
    REQUIRE(prim->args && prim->arg_mds, dnnl_out_of_memory);
    prim->nargs = wino_conv_args(prim->wino, prim->args, prim->arg_mds);
    return dnnl_success;
}

/* The arguments of prim->own, once it is built, as prim's. */
static dnnl_status_t adopt_own(mmx_prim *prim) {
    const own_kernel *k = prim->own;
    prim->args = malloc(sizeof(int) * OWN_MAX_ARGS);
    prim->arg_mds = malloc(sizeof(*prim->arg_mds) * OWN_MAX_ARGS);
    REQUIRE(prim->args && prim->arg_mds, dnnl_out_of_memory);
    for (int i = 0; i < k->nargs; i++) {
        prim->args[i] = k->args[i];
        prim->arg_mds[i] = k->mds[i];
    }
    prim->nargs = k->nargs;
    return dnnl_success;
}

int mmx_dw8_available(void) {
    return dw8_available();
}

int mmx_dw8_conv_init(mmx_prim *prim, mmx_engine *engine,
        const int64_t *src_dims, int stride, int with_bias, int relu, int dst_s8) {
    (void)engine;   /* the kernel is minimx's: no oneDNN object to create */
    PASS(dw8_conv_create(&prim->own, src_dims, stride, with_bias, relu, dst_s8));
    return adopt_own(prim);
}

int mmx_pw8_available(void) {
    return pw8_available();
}

int mmx_pw8_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int src_s8, int64_t oc, int with_bias, int relu, int dst_s8) {
    (void)engine;
    PASS(pw8_conv_create(&prim->own, src_dims, src_s8, oc, with_bias, relu, dst_s8));
    return adopt_own(prim);
}

int mmx_nhwc_input_available(void) {
    return nhwc_input_available();
}

int mmx_nhwc_input_init(mmx_prim *prim, mmx_engine *engine, const int64_t *dims,
        int dst_dtype) {
    (void)engine;
    PASS(nhwc_input_create(&prim->own, dims, (dnnl_data_type_t)dst_dtype));
    return adopt_own(prim);
}

int mmx_first_conv_available(void) {
    return first_conv_available();
}

int mmx_first_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int64_t oc, float lo, float hi, float scale, int dst_s8) {
    (void)engine;
    PASS(first_conv_create(&prim->own, src_dims, oc, lo, hi, scale, dst_s8));
    return adopt_own(prim);
}

int mmx_pwdw_available(void) {
    return pwdw_available();
}

int mmx_pwdw_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int64_t oc, int64_t stride, int64_t pc, int sum, const float *lo, const float *hi) {
    (void)engine;
    PASS(pwdw_conv_create(&prim->own, src_dims, oc, stride, pc, sum, lo, hi));
    return adopt_own(prim);
}

/* ---- plans ---- */

typedef struct {
    const mmx_prim *prim;
    int nargs; /* the primitive's arguments, plus the scratchpad if any */
    dnnl_exec_arg_t *args;
    wino_step *wino; /* for a Winograd convolution, bound by finalize */
} step_t;

/* Steps [0, end) run once per part of the batch (mmx_plan_set_loop). */
typedef struct {
    int end, count, n;
    dnnl_memory_t *parts; /* each views one part of a larger buffer */
    int *io;              /* the io memory it starts at, or -1: at base */
    char **base;          /* its first part's address (io < 0), from finalize */
    int64_t *stride;      /* bytes from one part to the next */
} loop_t;

struct mmx_plan {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    int nsteps, capacity;
    step_t *steps;
    int nio;
    dnnl_memory_t *io;
    size_t scratch_size;
    void *scratch;
    dnnl_memory_t *scratch_mems; /* one per step, over the one buffer */
    loop_t loop;                 /* count 0: none */
};

mmx_plan *mmx_plan_new(void) {
    return calloc(1, sizeof(mmx_plan));
}

void mmx_plan_destroy(mmx_plan *plan) {
    if (!plan) return;
    for (int i = 0; i < plan->nsteps; i++) {
        free(plan->steps[i].args);
        if (plan->scratch_mems && plan->scratch_mems[i])
            dnnl_memory_destroy(plan->scratch_mems[i]);
        wino_step_destroy(plan->steps[i].wino);
    }
    free(plan->scratch_mems);
    free(plan->scratch);
    free(plan->loop.parts);
    free(plan->loop.io);
    free(plan->loop.base);
    free(plan->loop.stride);
    free(plan->steps);
    free(plan->io);
    if (plan->stream) dnnl_stream_destroy(plan->stream);
    free(plan);
}

int mmx_plan_init(mmx_plan *plan, mmx_engine *engine) {
    plan->engine = engine;
    CHECK(dnnl_stream_create(&plan->stream, engine, dnnl_stream_default_flags));
    return dnnl_success;
}

int mmx_plan_add_step(
        mmx_plan *plan, const mmx_prim *prim, mmx_memory *const *mems) {
    REQUIRE(plan->scratch_mems == NULL, dnnl_invalid_arguments);
    REQUIRE(prim->primitive != NULL || prim->wino != NULL || prim->own != NULL,
            dnnl_invalid_arguments);
    if (plan->nsteps == plan->capacity) {
        int capacity = plan->capacity ? 2 * plan->capacity : 8;
        step_t *steps = realloc(plan->steps, sizeof(step_t) * capacity);
        REQUIRE(steps != NULL, dnnl_out_of_memory);
        plan->steps = steps;
        plan->capacity = capacity;
    }
    step_t *step = &plan->steps[plan->nsteps];
    memset(step, 0, sizeof(*step));
    step->prim = prim;
    step->nargs = prim->nargs;
    step->args = malloc(sizeof(dnnl_exec_arg_t) * (prim->nargs + 1));
    REQUIRE(step->args != NULL, dnnl_out_of_memory);
    for (int i = 0; i < prim->nargs; i++) {
        step->args[i].arg = prim->args[i];
        step->args[i].memory = mems[i];
    }
    plan->nsteps++;
    return dnnl_success;
}

int mmx_plan_set_io(mmx_plan *plan, int n, mmx_memory *const *mems) {
    REQUIRE(n >= 0, dnnl_invalid_arguments);
    dnnl_memory_t *io = malloc(sizeof(dnnl_memory_t) * (n ? n : 1));
    REQUIRE(io != NULL, dnnl_out_of_memory);
    memcpy(io, mems, sizeof(dnnl_memory_t) * n);
    free(plan->io);
    plan->io = io;
    plan->nio = n;
    return dnnl_success;
}

int mmx_plan_set_loop(mmx_plan *plan, int end, int count, int n,
        mmx_memory *const *parts, const int *io, const int64_t *stride) {
    loop_t *loop = &plan->loop;
    REQUIRE(plan->scratch_mems == NULL && loop->count == 0,
            dnnl_invalid_arguments);
    REQUIRE(end > 0 && end <= plan->nsteps && count > 1 && n >= 0,
            dnnl_invalid_arguments);
    size_t k = n ? (size_t)n : 1;
    loop->parts = malloc(sizeof(dnnl_memory_t) * k);
    loop->io = malloc(sizeof(int) * k);
    loop->base = calloc(k, sizeof(char *));
    loop->stride = malloc(sizeof(int64_t) * k);
    REQUIRE(loop->parts && loop->io && loop->base && loop->stride,
            dnnl_out_of_memory);
    for (int i = 0; i < n; i++) {
        REQUIRE(io[i] < plan->nio && stride[i] > 0, dnnl_invalid_arguments);
        loop->parts[i] = parts[i];
        loop->io[i] = io[i];
        loop->stride[i] = stride[i];
    }
    loop->end = end;
    loop->n = n;
    loop->count = count;
    return dnnl_success;
}

int mmx_plan_finalize(mmx_plan *plan) {
    REQUIRE(plan->scratch_mems == NULL, dnnl_invalid_arguments);
    for (int i = 0; i < plan->loop.n; i++) {
        void *base = NULL;
        if (plan->loop.io[i] < 0)
            CHECK(dnnl_memory_get_data_handle(plan->loop.parts[i], &base));
        plan->loop.base[i] = base;
    }
    for (int i = 0; i < plan->nsteps; i++) {
        size_t size = mmx_prim_scratchpad_size(plan->steps[i].prim);
        if (size > plan->scratch_size) plan->scratch_size = size;
    }
    plan->scratch_mems = calloc(plan->nsteps ? plan->nsteps : 1,
            sizeof(dnnl_memory_t));
    REQUIRE(plan->scratch_mems != NULL, dnnl_out_of_memory);
    if (plan->scratch_size == 0) return dnnl_success;

    /* Kernels expect cache-line (64-byte) alignment of the scratchpad. */
    plan->scratch = aligned_alloc(64, cache_lines(plan->scratch_size));
    REQUIRE(plan->scratch != NULL, dnnl_out_of_memory);
    for (int i = 0; i < plan->nsteps; i++) {
        step_t *step = &plan->steps[i];
        if (step->prim->wino) {
            PASS(wino_step_create(&step->wino, step->prim->wino,
                    plan->engine, plan->scratch, step->args[1].memory));
            continue;
        }
        if (step->prim->own) continue;   /* its run takes plan->scratch */
        const_dnnl_memory_desc_t md = dnnl_primitive_desc_query_md(
                step->prim->pd, dnnl_query_scratchpad_md, 0);
        if (dnnl_memory_desc_get_size(md) == 0) continue;
        CHECK(dnnl_memory_create(
                &plan->scratch_mems[i], md, plan->engine, plan->scratch));
        step->args[step->nargs].arg = DNNL_ARG_SCRATCHPAD;
        step->args[step->nargs].memory = plan->scratch_mems[i];
        step->nargs++;
    }
    return dnnl_success;
}

size_t mmx_plan_scratchpad_size(const mmx_plan *plan) {
    return plan->scratch_size;
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);   /* Python's time.perf_counter_ns clock */
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Step i; with times, the start and end of this run of it at times[0], [1]. */
static int run_step(mmx_plan *plan, int i, int64_t *times) {
    step_t *step = &plan->steps[i];
    if (times) times[0] = now_ns();
    dnnl_status_t status = step->wino
            ? wino_step_run(step->wino, plan->stream, step->args)
            : step->prim->own ? step->prim->own->ops->run(step->prim->own, plan->scratch,
                    step->args)
            : dnnl_primitive_execute(step->prim->primitive, plan->stream,
                    step->nargs, step->args);
    if (status != dnnl_success) {
        char what[96];
        snprintf(what, sizeof(what), "dnnl_primitive_execute(step %d: %s)", i,
                mmx_prim_impl(step->prim));
        return mmx_fail(status, what);
    }
    if (times) {   /* the step's own end, not the next one's start */
        CHECK(dnnl_stream_wait(plan->stream));
        times[1] = now_ns();
    }
    return dnnl_success;
}

int mmx_plan_run(mmx_plan *plan, int n, void *const *handles, int64_t *times) {
    REQUIRE(plan->scratch_mems != NULL, dnnl_invalid_arguments);
    REQUIRE(n == plan->nio, dnnl_invalid_arguments);
    for (int i = 0; i < n; i++)
        CHECK(dnnl_memory_set_data_handle(plan->io[i], handles[i]));
    const loop_t *loop = &plan->loop;
    int first = 0, run = 0;   /* the first step after the loop, runs so far */
    for (int part = 0; part < loop->count; part++) {
        for (int k = 0; k < loop->n; k++) {
            char *base = loop->io[k] < 0 ? loop->base[k] : handles[loop->io[k]];
            CHECK(dnnl_memory_set_data_handle(
                    loop->parts[k], base + part * loop->stride[k]));
        }
        for (int i = 0; i < loop->end; i++, run++)
            PASS(run_step(plan, i, times ? times + 2 * run : NULL));
        first = loop->end;
    }
    for (int i = first; i < plan->nsteps; i++, run++)
        PASS(run_step(plan, i, times ? times + 2 * run : NULL));
    CHECK(dnnl_stream_wait(plan->stream));
    return dnnl_success;
}

/* A plan run handed to the oneDNN thread as a C job: no Python runs there.
 * last_error is per thread, so a failure's message travels back in the call. */
struct plan_call {
    mmx_plan *plan;
    int n;
    void *const *handles;
    int64_t *times;
    char error[sizeof(last_error)];
};

static int plan_job(void *arg) {
    struct plan_call *call = arg;
    int status = mmx_plan_run(call->plan, call->n, call->handles, call->times);
    if (status != dnnl_success)
        memcpy(call->error, last_error, sizeof(call->error));
    return status;
}

int mmx_plan_run_served(mmx_plan *plan, int n, void *const *handles, int64_t *times) {
    struct plan_call call = {plan, n, handles, times, {0}};
    int status = mmx_worker_call(plan_job, &call);
    if (status != dnnl_success && call.error[0])
        memcpy(last_error, call.error, sizeof(last_error));
    return status;
}
