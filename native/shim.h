/* What the shim's C files (minimx_dnnl.c, winograd.c, depthwise_u8.c) share:
 * the error rule and the alignment of scratchpad pieces. Not the cffi surface: that is
 * minimx_dnnl.h, which holds no oneDNN type, so cffi parses only minimx's
 * own declarations; the C files themselves include dnnl.h.
 *
 * Errors never exit: CHECK returns a failing oneDNN call's status to the
 * caller and mmx_fail leaves the call text and dnnl_status2str() in a
 * thread-local buffer (mmx_last_error) that Python turns into a
 * BackendError; REQUIRE does the same for a condition, PASS passes on the
 * status of the shim's own functions, which have recorded it.
 *
 * Include after oneapi/dnnl/dnnl.h.
 */
#ifndef MINIMX_SHIM_H
#define MINIMX_SHIM_H

#include <stddef.h>

/* Records "what: <status>" for mmx_last_error() and returns status. */
dnnl_status_t mmx_fail(dnnl_status_t status, const char *what);

#define CHECK(call) \
    do { \
        dnnl_status_t check_status_ = (call); \
        if (check_status_ != dnnl_success) return mmx_fail(check_status_, #call); \
    } while (0)

#define REQUIRE(cond, status) \
    do { \
        if (!(cond)) return mmx_fail((status), "requirement failed: " #cond); \
    } while (0)

/* For a call to the shim's own code, which has recorded its failure: the
 * innermost failing call is the one worth reporting, so pass its status on
 * without recording again. */
#define PASS(call) \
    do { \
        dnnl_status_t pass_status_ = (call); \
        if (pass_status_ != dnnl_success) return pass_status_; \
    } while (0)

/* `bytes` rounded up to whole 64-byte cache lines: buffers carved from one
 * allocation stay aligned, which oneDNN's kernels expect. */
static inline size_t cache_lines(size_t bytes) {
    return (bytes + 63) / 64 * 64;
}

#endif
