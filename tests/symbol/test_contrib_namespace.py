"""mx.sym.contrib and mx.nd.contrib: MXNet's short names for the _contrib_ operators."""
import numpy as np

import minimx as mx


def test_every_contrib_operator_has_its_short_name_in_both_namespaces():
    names = [n for n in mx.ops.list_ops() if n.startswith("_contrib_")]
    assert names
    for name in names:
        short = name[len("_contrib_"):]
        assert getattr(mx.sym.contrib, short).__name__ == short   # as MXNet names them
        assert getattr(mx.nd.contrib, short).__name__ == short


def test_a_contrib_symbol_and_ndarray_compute_the_same():
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    sym = mx.sym.contrib.BilinearResize2D(mx.sym.var("x"), height=5, width=4)
    ex = sym.bind(mx.cpu(), {"x": mx.nd.array(x)}, grad_req="null")
    want = mx.nd.contrib.BilinearResize2D(mx.nd.array(x), height=5, width=4).asnumpy()
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), want)
    assert want.shape == (1, 2, 5, 4)
