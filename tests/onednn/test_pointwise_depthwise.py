"""pwdw_conv (minimx's kernel for a 1x1 convolution, the depthwise one reading
it and, optionally, a projection): its float32 sums exactly, oneDNN's
primitives within a few last bits, NaN passed through, and what it takes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.backends.dnnl.conv_layout import BLOCKED
from minimx.onednn import pointwise_depthwise as pd

from .helpers import SETTINGS, run_with_threads

F32, F64 = np.float32, np.float64
kernel = pytest.mark.skipif(onednn.available() and not pd.pwdw_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")
NONE, RELU, RELU6 = (-np.inf, np.inf), (0.0, np.inf), (0.0, 6.0)


def fma(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """acc + a * b rounded once to float32, as a fused multiply-add (the
    float64 product of two float32 values is exact)."""
    return (acc.astype(F64) + a.astype(F64) * b.astype(F64)).astype(F32)


def clamp(y: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """min(max(y, lo), hi) with NaN passing through."""
    lo, hi = bounds
    return np.where(np.isnan(y), y, np.minimum(np.maximum(y, F32(lo)), F32(hi)))


def expected(x, w1, b1, w2, b2, stride, bounds, w3=None, b3=None, residual=False
             ) -> np.ndarray:
    """The kernel's steps in numpy: each sum from the bias, the 1x1 ones over
    the input channels in order, the depthwise one over the taps row by row
    (a padding row skipped, a padding column adding zero), then the bounds;
    the projection (`w3`) then adds the residual."""
    e = clamp(pointwise(x, w1, b1), bounds[0])
    n, c, h, wd = e.shape
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    padded = np.zeros((n, c, h + 2, wd + 2), F32)
    padded[:, :, 1:h + 1, 1:wd + 1] = e
    y = np.broadcast_to(b2.reshape(1, -1, 1, 1), (n, c, oh, ow)).astype(F32)
    for r in range(3):
        rows = np.arange(oh) * stride + r        # padded row indices
        inside = ((rows >= 1) & (rows <= h)).reshape(1, 1, -1, 1)
        for col in range(3):
            taps = padded[:, :, rows][:, :, :, col:col + stride * ow:stride]
            y = np.where(inside, fma(y, w2[:, 0, r, col].reshape(1, -1, 1, 1), taps), y)
    y = clamp(y, bounds[1])
    if w3 is None:
        return y
    p = pointwise(y, w3, b3)
    return p + x if residual else p


def pointwise(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A 1x1 convolution's sums: from the bias, one FMA per input channel in order."""
    acc = np.broadcast_to(b.reshape(1, -1, 1, 1),
                          (x.shape[0], w.shape[0], *x.shape[2:])).astype(F32)
    for k in range(x.shape[1]):
        acc = fma(acc, w[:, k, 0, 0].reshape(1, -1, 1, 1), x[:, k:k + 1])
    return acc


def run_kernel(x, w1, b1, w2, b2, stride, bounds, w3=None, b3=None, residual=False
               ) -> np.ndarray:
    """pwdw_conv in a plan: plain float32 in, reordered to and from nChw16c."""
    project = 0 if w3 is None else w3.shape[0]
    op = onednn.pwdw_conv(x.shape, w1.shape[0], stride=stride, bounds=bounds, project=project,
                          residual=residual)
    plan = onednn.Plan("pwdw")
    args = dict(weights=plan.constant(onednn.constant(op, "weights", w1)),
                bias=plan.constant(b1),
                dw_weights=plan.constant(onednn.constant(op, "dw_weights", w2)),
                dw_bias=plan.constant(b2))
    if project:
        args.update(post1_weights=plan.constant(onednn.constant(op, "post1_weights", w3)),
                    post1_bias=plan.constant(onednn.constant(op, "post1_bias", b3)))
    y = plan.add(op, src=plan.reorder(plan.input(x.shape), op.desc("src")), **args)
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape)))
    (out,) = plan.run([x])
    return out


def case(n: int, c: int, h: int, w: int, oc: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, c, h, w)).astype(F32),
            rng.normal(0, 0.5, (oc, c, 1, 1)).astype(F32), rng.normal(0, 0.5, oc).astype(F32),
            rng.normal(0, 0.5, (oc, 1, 3, 3)).astype(F32), rng.normal(0, 0.2, oc).astype(F32))


@kernel
@SETTINGS
@given(n=st.integers(1, 3), c=st.integers(1, 40), h=st.integers(1, 30), w=st.integers(1, 30),
       oc=st.sampled_from([16, 32, 48, 80]), stride=st.sampled_from([1, 2]),
       seed=st.integers(0, 99), bounds=st.sampled_from([(NONE, NONE), (RELU6, RELU6),
                                                        (RELU, NONE)]))
def test_the_kernels_float32_sums_exactly(n, c, h, w, oc, stride, seed, bounds):
    # Input channels in one block and in two (a part one), 1-5 blocks out (a
    # group of two and a lone one), widths of every register-block split.
    args = case(n, c, h, w, oc, seed)
    np.testing.assert_array_equal(run_kernel(*args, stride, bounds),
                                  expected(*args, stride, bounds))


@kernel
@SETTINGS
@given(n=st.integers(1, 3), c=st.integers(1, 40), h=st.integers(1, 30), w=st.integers(1, 30),
       oc=st.sampled_from([16, 48]), stride=st.sampled_from([1, 2]),
       project=st.sampled_from([8, 16, 24, 40]), residual=st.booleans(),
       seed=st.integers(0, 99))
def test_with_the_projection_its_sums_exactly(n, c, h, w, oc, stride, project, residual,
                                              seed):
    # Projections to part blocks (their padding must stay zero), a residual
    # where the shapes allow one.
    residual = residual and stride == 1
    c = project if residual else c
    x, w1, b1, w2, b2 = case(n, c, h, w, oc, seed)
    rng = np.random.default_rng(seed + 1)
    w3 = rng.normal(0, 0.5, (project, oc, 1, 1)).astype(F32)
    b3 = rng.normal(0, 0.2, project).astype(F32)
    args = (x, w1, b1, w2, b2, stride, (RELU6, RELU6), w3, b3, residual)
    np.testing.assert_array_equal(run_kernel(*args), expected(*args))


def exact_cases() -> None:
    """Blocks and pairs whose rows split into bands among the threads (the
    kernel reads OpenMP's thread count), each checked bit for bit."""
    for n, c, h, oc, stride, project in [(1, 16, 37, 96, 1, 16), (1, 24, 40, 144, 2, 32),
                                         (2, 8, 29, 48, 1, 0), (3, 16, 50, 64, 2, 24)]:
        x, w1, b1, w2, b2 = case(n, c, h, h, oc, 7)
        rng = np.random.default_rng(8)
        w3 = rng.normal(0, 0.5, (project, oc, 1, 1)).astype(F32) if project else None
        b3 = rng.normal(0, 0.2, project).astype(F32) if project else None
        args = (x, w1, b1, w2, b2, stride, (RELU6, RELU6), w3, b3, project == c and stride == 1)
        np.testing.assert_array_equal(run_kernel(*args), expected(*args))


@kernel
@pytest.mark.parametrize("threads", [2, 3])
def test_rows_split_among_threads_the_same_sums(threads):
    # Three threads split an image's rows into unequal bands.
    run_with_threads("tests.onednn.test_pointwise_depthwise", "exact_cases", threads)


@kernel
@pytest.mark.parametrize("src, oc, stride, project", [
    ((1, 16, 8), 32, 1, 0), ((1, 16, 8, 8), 24, 1, 0), ((1, 16, 8, 8), 0, 1, 0),
    ((1, 16, 8, 8), 32, 3, 0), ((1, 16, 8, 8), 32, 1, -1)])
def test_refuses_what_it_cannot_run_naming_the_values(src, oc, stride, project):
    with pytest.raises(BackendError, match=f"pwdw_conv: needs .* got src .*out_channels {oc}, "
                                           f"stride {stride}, project {project}"):
        onednn.pwdw_conv(src, oc, stride=stride, bounds=(NONE, NONE), project=project)


@kernel
def test_a_residual_needs_the_inputs_shape():
    with pytest.raises(BackendError, match="a residual needs the projection to give"):
        onednn.pwdw_conv((1, 16, 8, 8), 32, stride=1, bounds=(NONE, NONE), project=24,
                         residual=True)
    with pytest.raises(BackendError, match="a residual needs"):
        onednn.pwdw_conv((1, 16, 8, 8), 32, stride=2, bounds=(NONE, NONE), project=16,
                         residual=True)


@kernel
@pytest.mark.parametrize("stride", [1, 2])
def test_onednns_two_primitives_within_a_few_last_bits(stride):
    """Against oneDNN's 1x1 and depthwise convolutions in nChw16c, relu6 after each."""
    x, w1, b1, w2, b2 = case(1, 24, 56, 56, 144, 0)
    relu6 = [onednn.PostOp.eltwise("clip", 0.0, 6.0)]
    plan = onednn.Plan("onednn")
    y = plan.reorder(plan.input(x.shape), onednn.MemoryDesc.with_layout(x.shape, BLOCKED))
    for w, b, kw in ((w1, b1, {}), (w2, b2, dict(stride=(stride,) * 2, pad=(1, 1),
                                                  num_group=144))):
        conv = onednn.conv(y.desc, w.shape, bias=True, dst_layout=BLOCKED, post_ops=relu6,
                           **kw)
        y = plan.add(conv, src=y, weights=plan.constant(onednn.constant(conv, "weights", w)),
                     bias=plan.constant(b))
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape)))
    (theirs,) = plan.run([x])
    np.testing.assert_allclose(run_kernel(x, w1, b1, w2, b2, stride, (RELU6, RELU6)), theirs,
                               rtol=1e-5, atol=1e-5)


@kernel
def test_nan_passes_through_the_bounds():
    x, w1, b1, w2, b2 = case(1, 8, 6, 6, 16, 1)
    x[0, 3, 2, 2] = np.nan
    got = run_kernel(x, w1, b1, w2, b2, 1, (NONE, NONE))
    assert np.isnan(got[0, :, 1:4, 1:4]).all()        # the pixels whose taps read it
    assert np.count_nonzero(np.isnan(got)) == 16 * 9
    np.testing.assert_array_equal(got, expected(x, w1, b1, w2, b2, 1, (NONE, NONE)))


def test_supports_only_what_the_kernel_takes_and_pays_for():
    ok = dict(dw_stride=(1, 1), dw_pad=(1, 1), dw_num_group=96)
    src, w1, w2 = (1, 16, 56, 56), (96, 16, 1, 1), (96, 1, 3, 3)
    assert pd.pwdw_supports(src, w1, w2, **ok) == pd.pwdw_available()
    assert pd.pwdw_supports(src, w1, w2, **{**ok, "dw_stride": (2, 2)}) == pd.pwdw_available()
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_stride": (3, 3)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_pad": (0, 0)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_dilate": (2, 2)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_num_group": 48})
    assert not pd.pwdw_supports(src, w1, w2, stride=(2, 2), **ok)
    assert not pd.pwdw_supports(src, w1, w2, pad=(1, 1), **ok)
    assert not pd.pwdw_supports(src, (88, 16, 1, 1), (88, 1, 3, 3),
                                **{**ok, "dw_num_group": 88})    # not whole blocks
    assert not pd.pwdw_supports(src, (96, 16, 3, 3), w2, **ok)
    wide = (1, pd.MAX_IN_CHANNELS + 1, 56, 56)
    assert not pd.pwdw_supports(wide, (192, wide[1], 1, 1), (192, 1, 3, 3),
                                **{**ok, "dw_num_group": 192})
    assert not pd.pwdw_supports((1, 32, 56, 56), (96, 32, 1, 1), w2, **ok)  # 3x: too little
    assert pd.pwdw_projects(96, (24, 96, 1, 1))
    assert not pd.pwdw_projects(96, (24, 48, 1, 1))
    assert not pd.pwdw_projects(96, (24, 96, 3, 3))
    assert not pd.pwdw_projects(96, (24, 96, 1, 1), stride=(2, 2))
    assert not pd.pwdw_projects(96, (24, 96, 1, 1), num_group=2)
