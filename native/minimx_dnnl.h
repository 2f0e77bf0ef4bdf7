/* The C surface of the extension module minimx._dnnl.
 *
 * native/build_dnnl.py hands this file to cffi as its cdef, so it holds only
 * what cffi can parse: no #include, no #define, no conditionals, and no
 * oneDNN type (dnnl.h is for the C files, which include this after it).
 *
 * Conventions:
 * - Every function returning int returns a dnnl_status_t (0 = success). On
 *   failure mmx_last_error() names the failing oneDNN call and its status.
 * - Objects the caller frees come from *_new / *_create and go to *_destroy.
 *   A primitive or a plan is allocated first (mmx_prim_new, mmx_plan_new)
 *   and filled by an *_init call, so a failed init leaks nothing: the
 *   caller destroys the half-built object as usual.
 * - Tensors are f32 or bf16, or s8/u8/s32 for INT8 primitives (enum mmx_dtype).
 *   Dims and strides are int64_t arrays of ndims entries; spatial arrays
 *   (strides, dilates, paddings, kernel) hold ndims - 2 entries.
 */

/* oneDNN's own opaque handles under shorter names: an mmx_md * is a
 * dnnl_memory_desc_t, an mmx_memory * a dnnl_memory_t. */
typedef struct dnnl_engine mmx_engine;
typedef struct dnnl_memory_desc mmx_md;
typedef struct dnnl_memory mmx_memory;

/* Execution argument kinds: the values of oneDNN's DNNL_ARG_* macros
 * (checked against them at compile time in the shim). */
enum mmx_arg {
    MMX_ARG_SRC = 1,
    MMX_ARG_SRC_1 = 2,
    MMX_ARG_DST = 17,
    MMX_ARG_WEIGHTS = 33,
    MMX_ARG_BIAS = 41,
    MMX_ARG_MEAN = 49,
    MMX_ARG_VARIANCE = 50,
    MMX_ARG_SCALE = 51,
    MMX_ARG_SHIFT = 52,
    MMX_ARG_MULTIPLE_SRC = 1024,
    MMX_ARG_ATTR_SCALES = 4096,  /* | the argument the scales belong to */
    MMX_ARG_POST_OP_DW = 16384,  /* | a depthwise post-op's weights or bias */
    MMX_ARG_POST_OP_BASE = 32768
};

/* Data types: the values of oneDNN's dnnl_data_type_t (checked too). */
enum mmx_dtype {
    MMX_DTYPE_UNDEF = 0,
    MMX_BF16 = 2,
    MMX_F32 = 3,
    MMX_S32 = 4,
    MMX_S8 = 5,
    MMX_U8 = 6
};

/* Algorithm kinds: the values of oneDNN's dnnl_alg_kind_t (checked too). */
enum mmx_alg {
    MMX_ELTWISE_RELU = 0x20,
    MMX_ELTWISE_TANH = 0x21,
    MMX_ELTWISE_ELU = 0x22,
    MMX_ELTWISE_SQUARE = 0x23,
    MMX_ELTWISE_ABS = 0x24,
    MMX_ELTWISE_SQRT = 0x25,
    MMX_ELTWISE_LINEAR = 0x26,
    MMX_ELTWISE_SOFT_RELU = 0x27,
    MMX_ELTWISE_LOGISTIC = 0x29,
    MMX_ELTWISE_EXP = 0x2a,
    MMX_ELTWISE_GELU_TANH = 0x2b,
    MMX_ELTWISE_SWISH = 0x2c,
    MMX_ELTWISE_LOG = 0x2d,
    MMX_ELTWISE_CLIP = 0x2e,
    MMX_ELTWISE_GELU_ERF = 0x31,
    MMX_ELTWISE_ROUND = 0x32,
    MMX_POOLING_MAX = 0x1ff,
    MMX_POOLING_AVG_INCLUDE_PADDING = 0x2ff,
    MMX_POOLING_AVG_EXCLUDE_PADDING = 0x3ff,
    MMX_LRN_ACROSS_CHANNELS = 0xaff,
    MMX_RESAMPLING_NEAREST = 0x2fff0,
    MMX_RESAMPLING_LINEAR = 0x2fff1,
    MMX_BINARY_ADD = 0x1fff0,
    MMX_BINARY_MUL = 0x1fff1,
    MMX_BINARY_MAX = 0x1fff2,
    MMX_BINARY_MIN = 0x1fff3,
    MMX_BINARY_DIV = 0x1fff4,
    MMX_BINARY_SUB = 0x1fff5,
    MMX_BINARY_GT = 0x1fff7,
    MMX_BINARY_LT = 0x1fff9,
    MMX_BINARY_EQ = 0x1fffa,
    MMX_REDUCTION_MAX = 0x2fff2,
    MMX_REDUCTION_MIN = 0x2fff3,
    MMX_SOFTMAX_ACCURATE = 0x30000,
    MMX_SOFTMAX_LOG = 0x30001
};

/* RNN cells and directions: oneDNN's dnnl_alg_kind_t and
 * dnnl_rnn_direction_t values (checked too). */
enum mmx_rnn {
    MMX_RNN_VANILLA = 0x1fff,
    MMX_RNN_LSTM = 0x2fff,
    MMX_RNN_LBR_GRU = 0x4fff,
    MMX_RNN_LEFT2RIGHT = 1,
    MMX_RNN_BIDIRECTIONAL_CONCAT = 3
};

/* The execution arguments of RNN primitives beyond the ones above
 * (src_layer is MMX_ARG_SRC, src_iter MMX_ARG_SRC_1, weights_layer
 * MMX_ARG_WEIGHTS, dst_layer MMX_ARG_DST). */
enum mmx_rnn_arg {
    MMX_ARG_SRC_ITER_C = 3,
    MMX_ARG_DST_ITER = 18,
    MMX_ARG_DST_ITER_C = 19,
    MMX_ARG_WEIGHTS_ITER = 34
};

/* Post-op kinds for mmx_post_op.kind. */
enum mmx_post_op_kind {
    MMX_POST_ELTWISE = 0,  /* alg, alpha, beta */
    MMX_POST_SUM = 1,      /* dst += alpha * (previous dst content, read
                              as dtype, or as dst's type when undef) */
    MMX_POST_BINARY = 2    /* dst = alg(dst, src1); src1 bound at execution */
};

typedef struct {
    int kind;
    int alg;
    float alpha;
    float beta;
    const mmx_md *src1;  /* MMX_POST_BINARY only: the second operand's layout */
    int dtype;           /* MMX_POST_SUM only: an mmx_dtype */
} mmx_post_op;

/* Which arguments carry scales, as oneDNN masks (bit d: one scale per
 * index of dim d; 0: one scale for the tensor), or -1 for none. The values
 * are f32 memories bound at execution as the extra arguments
 * MMX_ARG_ATTR_SCALES | MMX_ARG_SRC (and so on). oneDNN v3 semantics: a
 * scale is a dequantization factor, f32 = scale * int. */
typedef struct {
    int src;
    int weights;
    int dst;
} mmx_scales;

/* An INT8 LSTM's quantization (oneDNN's rnn_data_qparams and
 * rnn_weights_qparams): u8 data = f32 * data_scale + data_shift, s8 weights
 * = f32 * weight_scales[gate * hidden + unit] (nscales = gates * hidden, one
 * per gate row, shared by both directions). */
typedef struct {
    float data_scale;
    float data_shift;
    int nscales;
    const float *weight_scales;
} mmx_rnn_qparams;

/* A memory descriptor read back: dims, and for blocked layouts the outer
 * strides and the inner blocks (e.g. nChw16c: one block of 16 on dim 1). */
typedef struct {
    int ndims;
    int64_t dims[12];
    int format_kind;  /* 0 undef, 1 any, 2 blocked, 3 opaque */
    int dtype;        /* an mmx_dtype */
    int64_t strides[12];
    int inner_nblks;
    int64_t inner_blks[12];
    int64_t inner_idxs[12];
    size_t size;  /* bytes */
} mmx_layout;

/* ---- errors and library facts ---- */
const char *mmx_last_error(void);
void mmx_version(int *major, int *minor, int *patch, const char **hash);
const char *mmx_isa(void);

/* ---- engine ----
 * One CPU engine serves the process; it is never destroyed, because objects
 * created on it may be freed after it at interpreter exit. Each plan owns
 * its stream. */
int mmx_engine_create(mmx_engine **engine);

/* ---- memory descriptors ---- */
/* Layout left to the primitive that receives it (format_tag any). */
int mmx_md_create_any(mmx_md **md, int ndims, const int64_t *dims, int dtype);
/* Channels (dim 1) in blocks of `block` (8 or 16), for 3 to 5 dims: oneDNN's
 * aBc16b, aBcd16b (nChw16c) or aBcde16b, and their 8-blocked forms. */
int mmx_md_create_channel_blocked(mmx_md **md, int ndims, const int64_t *dims, int dtype,
        int block);
/* Plain layout given by element strides (C order, or a permutation). */
int mmx_md_create_strided(mmx_md **md, int ndims, const int64_t *dims,
        const int64_t *strides, int dtype);
int mmx_md_clone(mmx_md **md, const mmx_md *existing);
/* ``existing`` with its axes permuted: axis i becomes axis perm[i]. */
int mmx_md_permute(mmx_md **md, const mmx_md *existing, const int *perm);
void mmx_md_destroy(mmx_md *md);
int mmx_md_layout(const mmx_md *md, mmx_layout *out);
int mmx_md_equal(const mmx_md *a, const mmx_md *b);

/* ---- memory objects ---- */
/* allocate != 0: the library owns a buffer of the descriptor's size;
 * otherwise `handle` (may be NULL, to be set later) is used as is. */
int mmx_memory_create(mmx_memory **mem, mmx_engine *engine, const mmx_md *md,
        void *handle, int allocate);
void mmx_memory_destroy(mmx_memory *mem);
int mmx_memory_set_handle(mmx_memory *mem, void *handle);

/* ---- primitives ----
 * Each *_init builds one primitive for forward inference with a user-mode
 * scratchpad, and records its execution arguments in order; read them back
 * with mmx_prim_nargs / mmx_prim_arg / mmx_prim_arg_md. Descriptors passed
 * in are only read during the call. Where a builder takes `scales` (NULL:
 * none), one f32 scale argument per scaled tensor follows the others, in
 * the order src, weights, dst; its descriptor has one entry per scale. */
typedef struct mmx_prim mmx_prim;

mmx_prim *mmx_prim_new(void);
void mmx_prim_destroy(mmx_prim *prim);
int mmx_prim_nargs(const mmx_prim *prim);
int mmx_prim_arg(const mmx_prim *prim, int index);
const mmx_md *mmx_prim_arg_md(const mmx_prim *prim, int index);
const char *mmx_prim_impl(const mmx_prim *prim);
size_t mmx_prim_scratchpad_size(const mmx_prim *prim);
/* Before an *_init: the primitive takes the first implementation in
 * oneDNN's order whose name does not contain `part` (e.g. "amx"), or the
 * last one where every later one does. `part` (at most 63 bytes) is copied. */
int mmx_prim_avoid(mmx_prim *prim, const char *part);

/* args: src, weights, [bias], dst, then one src1 per binary post-op, then
 * the scales. weights are oihw or goihw (groups); dilates are 0-based; bias
 * may be NULL. INT8: s8/u8 src, s8 weights, s32/f32 bias; the result is
 * post_ops(src_scale * weights_scale * int32 sum + bias) / dst_scale. */
int mmx_conv_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, int npost, const mmx_post_op *post,
        const mmx_scales *scales);
/* Same arguments as mmx_conv_init; weights dims are (O, I, ...) or
 * (G, O/G, I/G, ...) for the deconvolution's output/input channels. */
int mmx_deconv_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst,
        const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
        const int64_t *pad_r, int npost, const mmx_post_op *post);
/* args: src, weights, [bias], dst, binary post-op src1s, scales; INT8 as
 * for mmx_conv_init. */
int mmx_inner_product_init(mmx_prim *prim, mmx_engine *engine,
        const mmx_md *src, const mmx_md *weights, const mmx_md *bias,
        const mmx_md *dst, int npost, const mmx_post_op *post,
        const mmx_scales *scales);
/* args: src, weights, [bias], dst, binary post-op src1s. src (.., M, K),
 * weights (.., K, N), dst (.., M, N) of one number of dims; a size-1 batch
 * dim of src or weights broadcasts. Any strides (a transposed view). */
int mmx_matmul_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *weights, const mmx_md *bias, const mmx_md *dst, int npost,
        const mmx_post_op *post);
/* Over the last dim, statistics computed. args: src, [scale], [shift], dst
 * (dst in the src layout). */
int mmx_layer_norm_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        float epsilon, int use_scale, int use_shift);
/* args: src, dst (dst's spatial dims give the output size). */
int mmx_resampling_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst);
/* Global statistics. args: src, mean, variance, [scale], [shift], dst. */
int mmx_batch_norm_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        float epsilon, int use_scale, int use_shift);
/* args: src, dst (dst in the src layout). */
int mmx_eltwise_init(mmx_prim *prim, mmx_engine *engine, int alg, float alpha,
        float beta, const mmx_md *src);
/* args: src, dst. */
int mmx_pooling_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst, const int64_t *strides,
        const int64_t *kernel, const int64_t *pad_l, const int64_t *pad_r);
/* args: src, dst (dst in the src layout). */
int mmx_softmax_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, int axis);
/* Across channels. args: src, dst (dst in the src layout). */
int mmx_lrn_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        int64_t local_size, float alpha, float beta, float k);
/* args: src0, src1, dst, binary post-op src1s. src1 may broadcast. */
int mmx_binary_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src0, const mmx_md *src1, const mmx_md *dst, int npost,
        const mmx_post_op *post);
/* args: src, dst (dst's dims 1 where src's are reduced; f32 or s32 src). */
int mmx_reduction_init(mmx_prim *prim, mmx_engine *engine, int alg,
        const mmx_md *src, const mmx_md *dst);
/* args: src 0 .. n-1, dst. */
int mmx_concat_init(mmx_prim *prim, mmx_engine *engine, int n,
        const mmx_md *const *srcs, const mmx_md *dst, int axis);
/* A recurrent layer (or several, of one input size): cell MMX_RNN_VANILLA
 * (activation: an MMX_ELTWISE_RELU/TANH), MMX_RNN_LSTM or MMX_RNN_LBR_GRU
 * (the GRU whose reset gate multiplies the recurrent product with its
 * bias: cuDNN's and MXNet's), direction an MMX_RNN_* direction. src_layer
 * tnc, src_iter/dst_iter ldnc, src_iter_c/dst_iter_c (LSTM only) ldnc,
 * weights ldigo, bias ldgo (LBR GRU: G + 1 gates). src_iter, src_iter_c,
 * dst_iter and dst_iter_c may be NULL (zero initial state / not wanted).
 * qparams (LSTM only, else NULL) makes it INT8: u8 src_layer and src_iter,
 * s8 weights, f32 bias and cell states, u8 or f32 (dequantized) dst_layer
 * and dst_iter.
 * args: src_layer, [src_iter], [src_iter_c], weights_layer, weights_iter,
 * bias, dst_layer, [dst_iter], [dst_iter_c]. */
int mmx_rnn_init(mmx_prim *prim, mmx_engine *engine, int cell, int activation,
        int direction, const mmx_md *src_layer, const mmx_md *src_iter,
        const mmx_md *src_iter_c, const mmx_md *weights_layer,
        const mmx_md *weights_iter, const mmx_md *bias, const mmx_md *dst_layer,
        const mmx_md *dst_iter, const mmx_md *dst_iter_c,
        const mmx_rnn_qparams *qparams);
/* 3x3, stride-1, ungrouped convolution by Winograd F(tile x tile, 3x3),
 * tile 4 or 2: the transforms in C (winograd.c), the products in a oneDNN
 * matmul. src_dims is (N, C, H, W), pads are (top, left) and (bottom,
 * right); C and oc must be multiples of 16. Post-ops: [relu|clip] [sum
 * [relu|clip]] only. args: src (NHWC), weights ((tile + 2)^2, C, oc: the
 * Winograd-domain weights, in the matmul's layout), [bias], dst (NHWC). */
int mmx_wino_conv_init(mmx_prim *prim, mmx_engine *engine,
        const int64_t *src_dims, int64_t oc, const int64_t *pad_l,
        const int64_t *pad_r, int tile, int with_bias, int npost,
        const mmx_post_op *post);
/* INT8 depthwise 3x3 convolution, stride 1 or 2, padding 1 (depthwise_u8.h):
 * u8 NHWC src_dims (N, C, H, W) with C a multiple of 16 (at least 64 at
 * stride 2), weights (3, C, 4) s8 (a kernel row's three taps and a zero per
 * channel), [bias] f32 (C), factor f32 (1, C, 1, 1), dst u8 (or s8 with
 * dst_s8) NHWC:
 * dst = saturate(rint(relu?((float(acc) + bias) * factor))).
 * mmx_dw8_available: whether this build has it (AVX512-VNNI).
 * args: src, weights, [bias], factor (post-op 0's src1), dst. */
int mmx_dw8_available(void);
int mmx_dw8_conv_init(mmx_prim *prim, mmx_engine *engine,
        const int64_t *src_dims, int stride, int with_bias, int relu, int dst_s8);
/* INT8 1x1 convolution, stride 1 (pointwise_u8.h): u8 (s8 with src_s8) NHWC
 * src_dims (N, K, H, W) with K a multiple of 4 up to 32 or of 32 up to 1024, to oc
 * output channels (a multiple of 16); weights (oc / 16, K / 4, 64) s8 (a vector
 * of 16 output channels after another, four input channels of an output
 * channel a lane), [bias] f32 (oc), factor f32
 * (1, oc, 1, 1), the output channels of each whole group of 64 in the
 * kernel's order; dst u8 (or s8 with dst_s8) NHWC:
 * dst = saturate(rint(relu?((float(acc) + bias) * factor))).
 * mmx_pw8_available: whether this build has it (AVX512-VNNI).
 * args: src, weights, [bias], factor (post-op 0's src1), dst. */
int mmx_pw8_available(void);
int mmx_pw8_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int src_s8, int64_t oc, int with_bias, int relu, int dst_s8);
/* A three-channel NCHW f32 input of dims (N, 3, H, W) written NHWC (acdb) in
 * dst_dtype, MMX_F32 or MMX_BF16 (rounded to nearest even), by minimx's
 * kernel (nhwc_input.h). mmx_nhwc_input_available: whether this build has
 * it (AVX-512). args: src, dst. */
int mmx_nhwc_input_available(void);
int mmx_nhwc_input_init(mmx_prim *prim, mmx_engine *engine, const int64_t *dims,
        int dst_dtype);
/* A first convolution quantized on the way out (first_conv.h): 3x3, stride 2,
 * padding 1, from (N, 3, H, W) f32 NCHW to oc channels (a multiple of 16)
 * of u8 (s8 with dst_s8) NHWC: saturate(rint(min(max(conv + bias, lo), hi)
 * * scale)). mmx_first_conv_available: whether this build has it (AVX-512).
 * args: src, weights (27, oc) f32 (tap-major), bias (oc) f32, dst. */
int mmx_first_conv_available(void);
int mmx_first_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int64_t oc, float lo, float hi, float scale, int dst_s8);
/* A 1x1 convolution, the 3x3 depthwise convolution that reads it and,
 * optionally, a linear 1x1 projection, in one pass (pointwise_depthwise.h):
 * f32 nChw16c src_dims (N, C, H, W) to oc channels (a multiple of 16), then
 * the depthwise one with `stride` (1 or 2) and padding 1, then (pc > 0) pc
 * channels, adding src where `sum` (pc == C, stride 1); lo[0], hi[0] and
 * lo[1], hi[1] the first two's activation bounds. mmx_pwdw_available:
 * whether this build has it (AVX-512). args: src, weights (C, oc), bias
 * (oc), MMX_ARG_POST_OP_DW | weights (oc / 16, 9, 16), MMX_ARG_POST_OP_DW |
 * bias (oc), [post-op 1's weights (oc, PC) and bias (PC), PC = pc rounded up
 * to a multiple of 16], dst (nChw16c). */
int mmx_pwdw_available(void);
int mmx_pwdw_conv_init(mmx_prim *prim, mmx_engine *engine, const int64_t *src_dims,
        int64_t oc, int64_t stride, int64_t pc, int sum, const float *lo, const float *hi);
/* args: src, dst, scales (scales->weights must be -1). Converts the data
 * type too: dst = saturate(round(src_scale * src / dst_scale)), so a dst
 * scale quantizes f32 to s8/u8 and a src scale dequantizes. */
int mmx_reorder_init(mmx_prim *prim, mmx_engine *engine, const mmx_md *src,
        const mmx_md *dst, const mmx_scales *scales);

/* ---- the oneDNN thread ----
 * One thread runs all of the DNNL backend's oneDNN work (why: see
 * minimx/backends/dnnl/thread.py). mmx_worker_serve is that thread's body and
 * never returns; mmx_worker_call runs fn(arg) on it from any other thread (on
 * it: directly) and returns fn's result once it has run. Jobs run one at a
 * time, in no promised order between callers. Each side spins briefly
 * before it sleeps (worker.c says why). mmx_worker_forget, in a child after
 * fork, drops the parent's thread and whatever job it held. */
typedef int (*mmx_job)(void *arg);

void mmx_worker_serve(void);
int mmx_worker_call(mmx_job fn, void *arg);
void mmx_worker_forget(void);

/* ---- plans ----
 * A plan is a list of steps (primitive + one memory per argument) run in
 * order on the plan's own stream by one mmx_plan_run call. The plan
 * borrows primitives and memories: the caller keeps them alive. The io
 * memories are the ones whose buffers each run provides. */
typedef struct mmx_plan mmx_plan;

mmx_plan *mmx_plan_new(void);
void mmx_plan_destroy(mmx_plan *plan);
int mmx_plan_init(mmx_plan *plan, mmx_engine *engine);
int mmx_plan_add_step(mmx_plan *plan, const mmx_prim *prim,
        mmx_memory *const *mems);
int mmx_plan_set_io(mmx_plan *plan, int n, mmx_memory *const *mems);
/* Runs steps [0, end) `count` times, once per part of the batch, before the
 * rest: each of the n memories `parts` views one part of a larger buffer and
 * moves on by stride[i] bytes each time. It starts at the run's handle of
 * io memory io[i], or (io[i] < 0) where its own handle points at finalize.
 * Set once, before finalize. */
int mmx_plan_set_loop(mmx_plan *plan, int end, int count, int n,
        mmx_memory *const *parts, const int *io, const int64_t *stride);
/* Allocates one scratchpad for the largest step and binds it to all. */
int mmx_plan_finalize(mmx_plan *plan);
size_t mmx_plan_scratchpad_size(const mmx_plan *plan);
/* times: NULL, or room for two per step run (a step of the loop runs once
 * per part): each run's start and end in the order they ran, in ns of
 * CLOCK_MONOTONIC (the profiler's clock); timing waits for each step. */
int mmx_plan_run(mmx_plan *plan, int n, void *const *handles,
        int64_t *times);
/* mmx_plan_run on the oneDNN thread (see mmx_worker_call), as a C job. */
int mmx_plan_run_served(mmx_plan *plan, int n, void *const *handles,
        int64_t *times);
