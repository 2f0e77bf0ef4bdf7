"""The four operators added last, beyond their fixture cases in gap_ops' cases.json (run
by test_mxnet_tensor_ops.py): `_contrib_calibrate_entropy` bit for bit and through
entropy calibration, `_cvcopyMakeBorder` through `mx.image.copyMakeBorder`,
`IdentityAttachKLSparseReg` replayed for MXNet's training steps, and
`_sample_unique_zipfian`'s invariants and distribution against MXNet's statistics."""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, MinimxError, ShapeError
from minimx.contrib.quantization import Histogram, get_optimal_threshold

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gap_ops"
CASES = json.loads((FIXTURES / "cases.json").read_text())


@pytest.fixture(scope="module")
def recorded():
    with np.load(FIXTURES / "cases.npz") as npz:
        return {k: npz[k] for k in npz.files}


# -- _contrib_calibrate_entropy -------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(c for c in CASES if c.startswith("calibrate_")))
def test_calibrate_entropy_is_mxnets_bit_for_bit(case, recorded):
    hist, edges = (mx.nd.array(recorded[f"{case}:in_{i}"]) for i in range(2))
    threshold, divergence = mx.nd.contrib.calibrate_entropy(hist, edges, **CASES[case]["attrs"])
    assert threshold.dtype == divergence.dtype == np.float32
    assert threshold.asnumpy().tobytes() == recorded[f"{case}:out_0"].tobytes()
    assert divergence.asnumpy().tobytes() == recorded[f"{case}:out_1"].tobytes()


def test_entropy_calibration_searches_with_the_operator(recorded):
    """get_optimal_threshold's threshold and divergence are the operator's on its
    histogram (the uint8 layer's with twice the levels plus one)."""
    values = np.maximum(np.random.default_rng(4).normal(size=4000), 0).astype(np.float32)
    hist = Histogram.of(values, 301)
    for dtype, levels in (("int8", 31), ("uint8", 63)):
        best = get_optimal_threshold(hist, dtype, num_quantized_bins=31)
        threshold, divergence = mx.nd.contrib.calibrate_entropy(
            mx.nd.array(hist.counts), mx.nd.array(hist.edges), num_quantized_bins=levels)
        assert (best.threshold, best.divergence) == (threshold.asscalar(),
                                                     divergence.asscalar())


def test_calibrate_entropy_infers_and_refuses_as_named():
    net = mx.sym.contrib.calibrate_entropy(mx.sym.var("h"), mx.sym.var("e"),
                                           num_quantized_bins=3, name="cal")
    assert net.list_outputs() == ["cal_threshold", "cal_divergence"]
    assert net.infer_shape(h=(11,)) == ([(11,), (12,)], [(1,), (1,)], [])
    with pytest.raises(MinimxError, match=r"cal \(_contrib_calibrate_entropy\): needs an odd "
                                          r"number of bins, .*num_quantized_bins=3 .*got 10"):
        net.infer_shape(h=(10,))
    with pytest.raises(DTypeError, match=r"float64 does not match float32 .*hist=float64"):
        net.infer_type(h="float64")
    edges = mx.nd.array(np.linspace(-1, 1, 12))
    with pytest.raises(ShapeError, match=r"calibrate_entropy\): shape \(11,\) does not "
                                         r"match \(12,\)"):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones((11,)), edges[:11],
                                        num_quantized_bins=3).asnumpy()
    with pytest.raises(MinimxError, match=r"finite and non-negative, got \[-1.0\]"):
        mx.nd.contrib.calibrate_entropy(mx.nd.array([1, 1, -1, 1, 1.0]), edges[:6],
                                        num_quantized_bins=3)[0].asnumpy()


# -- _cvcopyMakeBorder ----------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(c for c in CASES if c.startswith("border_")))
def test_copy_make_border_gives_mxnets_pixels(case, recorded):
    src = recorded[f"{case}:in_0"]
    attrs = {k: json.loads(v.replace("(", "[").replace(")", "]")) for k, v in
             CASES[case]["attrs"].items()}
    values = tuple(attrs.pop("values", ()))
    got = mx.image.copyMakeBorder(mx.nd.array(src, dtype=src.dtype), **attrs, values=values)
    assert got.dtype == src.dtype
    np.testing.assert_array_equal(got.asnumpy(), recorded[f"{case}:out_0"], err_msg=case)


def test_copy_make_border_infers_and_refuses_as_opencv():
    net = mx.sym._cvcopyMakeBorder(mx.sym.var("src"), top=1, bot=2, left=3, right=0,
                                   name="pad")
    assert net.infer_shape(src=(4, 5, 3))[1] == [(7, 8, 3)]
    assert net.infer_type(src="int32")[1] == [np.int32]
    with pytest.raises(DTypeError, match=r"pad \(_cvcopyMakeBorder\): src must be float32, "
                                         r"float64, uint8, int32, got float16"):
        net.infer_type(src="float16")
    with pytest.raises(MinimxError, match="type must be 0-4 .*got type=5"):
        mx.image.copyMakeBorder(mx.nd.ones((2, 2, 1)), 1, 1, 1, 1, type=5)
    with pytest.raises(ShapeError, match="fills at most 4 channels, the image has 5"):
        mx.image.copyMakeBorder(mx.nd.ones((2, 2, 5)), 1, 1, 1, 1)
    # The other border types pad any number of channels.
    assert mx.image.copyMakeBorder(mx.nd.ones((2, 2, 5)), 1, 1, 1, 1, type=1).shape == (4, 4, 5)


# -- IdentityAttachKLSparseReg --------------------------------------------------------------

KL_RUNS = json.loads((FIXTURES / "kl_sparse_reg.json").read_text())


@pytest.mark.parametrize("case", sorted(KL_RUNS))
def test_kl_sparse_reg_steps_are_mxnets(case):
    """Forward is the identity; each backward updates moving_avg (from zeros) and adds
    the penalty's gradient, as MXNet's three bound steps."""
    with np.load(FIXTURES / "kl_sparse_reg.npz") as npz:
        rec = {k.removeprefix(f"{case}:"): npz[k] for k in npz.files if k.startswith(case)}
    net = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), name="reg",
                                           **KL_RUNS[case]["attrs"])
    assert net.list_auxiliary_states() == ["reg_moving_avg"]
    exe = net.simple_bind(mx.cpu(), data=rec["data_0"].shape)
    assert exe.aux_dict["reg_moving_avg"].asnumpy().tolist() == [0.0] * rec["data_0"].shape[1]
    for step in range(KL_RUNS[case]["steps"]):
        exe.arg_dict["data"][:] = rec[f"data_{step}"]
        out = exe.forward(is_train=True)[0].asnumpy()
        exe.backward(mx.nd.array(rec[f"head_{step}"]))
        # The auxiliary state first: reading it waits for the backward that writes it.
        np.testing.assert_allclose(exe.aux_dict["reg_moving_avg"].asnumpy(),
                                   rec[f"moving_avg_{step}"], rtol=1e-6)
        np.testing.assert_array_equal(out, rec[f"out_{step}"])
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), rec[f"grad_{step}"],
                                   rtol=1e-6, err_msg=f"{case} step {step}")


def test_kl_sparse_reg_refuses_what_mxnet_cannot_run():
    net = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), name="reg")
    assert net.infer_shape(data=(2, 3, 4))[2] == [(3,)]
    exe = net.simple_bind(mx.cpu(), data=(2, 3, 4))
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3, 4)))
    # MXNet's backward fails too: it averages over all axes but the last, 4 units.
    with pytest.raises(MinimxError, match=r"reg \(IdentityAttachKLSparseReg\): the data's "
                                          r"last axis \(\(2, 3, 4\)\) must match"):
        exe.grad_dict["data"].asnumpy()
    with pytest.raises(DTypeError, match="data must be float32, got float64"):
        net.infer_type(data="float64")
    bad = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), momentum=1.5, name="reg")
    with pytest.raises(MinimxError, match=r"momentum=1.5 must be in \[0, 1\]"):
        bad.infer_shape(data=(2, 3))


# -- _sample_unique_zipfian -----------------------------------------------------------------

ZIPFIAN = json.loads((FIXTURES / "zipfian.json").read_text())


def _zipf(range_max: int) -> np.ndarray:
    """P(value = k) for one draw round(exp(u log range_max)) - 1, u uniform in [0, 1)."""
    k = np.arange(range_max)
    return (np.log(np.minimum(k + 1.5, range_max)) - np.log(np.maximum(k + 0.5, 1))
            ) / np.log(range_max)


@pytest.mark.parametrize("stats", sorted(ZIPFIAN), ids=str)
def test_unique_zipfian_rows_are_distinct_and_distributed_as_mxnets(stats):
    want = ZIPFIAN[stats]
    mx.random.seed(11)
    samples, tries = mx.nd._sample_unique_zipfian(range_max=want["range_max"],
                                                  shape=tuple(want["shape"]))
    samples, tries = samples.asnumpy(), tries.asnumpy()
    rows, num_sampled = want["shape"]
    assert samples.dtype == tries.dtype == np.int64
    assert samples.shape == (rows, num_sampled) and tries.shape == (rows,)
    assert samples.min() >= 0 and samples.max() < want["range_max"]
    assert all(len(set(row)) == num_sampled for row in samples)
    assert (tries >= num_sampled).all()
    # Mean tries within 5 standard errors of MXNet's over as many rows.
    assert abs(tries.mean() - want["mean_tries"]) < 5 * want["std_tries"] / np.sqrt(rows)
    # A row's first sample is one draw: the kernel's distribution, as MXNet's counts.
    shown = len(want["first_sample_counts"])
    expected = _zipf(want["range_max"])[:shown] * rows
    for counts in (np.bincount(samples[:, 0], minlength=want["range_max"])[:shown],
                   np.array(want["first_sample_counts"])):
        assert (np.abs(counts - expected) < 5 * np.sqrt(expected) + 1).all()


def test_unique_zipfian_follows_mx_random_seed():
    runs = []
    for _ in range(2):
        mx.random.seed(7)
        runs.append([a.asnumpy() for a in mx.nd._sample_unique_zipfian(range_max=50,
                                                                       shape=(3, 10))])
    assert all((a == b).all() for a, b in zip(*runs, strict=True))
    # All classes: each row a permutation of them.
    samples, tries = mx.nd._sample_unique_zipfian(range_max=6, shape=(4, 6))
    assert (np.sort(samples.asnumpy(), axis=1) == np.arange(6)).all()


def test_unique_zipfian_infers_and_refuses():
    net = mx.sym._sample_unique_zipfian(range_max=10, shape=(2, 3), name="z")
    assert net.list_outputs() == ["z_output0", "z_output1"]
    assert net.infer_shape() == ([], [(2, 3), (2,)], [])
    assert net.infer_type() == ([], [np.int64, np.int64], [])
    with pytest.raises(MinimxError, match=r"z \(_sample_unique_zipfian\): cannot draw 11 "
                                          r"distinct values from range_max=10"):
        mx.sym._sample_unique_zipfian(range_max=10, shape=(2, 11), name="z").infer_shape()
    with pytest.raises(ShapeError, match=r"shape must be 2-D .*got \(6,\)"):
        mx.sym._sample_unique_zipfian(range_max=10, shape=(6,), name="z").infer_shape()
