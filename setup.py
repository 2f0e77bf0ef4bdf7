"""Builds minimx's optional native extension ``minimx._dnnl`` (oneDNN v3 via cffi).

All package metadata lives in pyproject.toml; this file only adds the cffi
module. native/build_dnnl.py finds oneDNN (MINIMX_DNNL_ROOT, else the
onednn-devel-cpu-gomp wheel that [build-system] requires installs into the
build environment, else the system). Without it, or when the extension fails
to compile, minimx still installs, without the backend, and says so.
"""
import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "native"))
from build_dnnl import MISSING_HELP, find_dnnl  # noqa: E402

paths = find_dnnl()
if paths is None:
    print(f"WARNING: {MISSING_HELP}", file=sys.stderr)
    setup()
else:
    print(f"minimx: building minimx._dnnl against {paths.origin} "
          f"({paths.include_dir}, {paths.library})", file=sys.stderr)
    # No module from an earlier build stays in the tree: one left by `python
    # native/build_dnnl.py` carries a suffix that Python prefers to the
    # _dnnl.abi3.so built here, and an editable install whose compile fails
    # (optional=True) would otherwise go on running the old one unnoticed.
    for stale in (Path(__file__).resolve().parent / "minimx").glob("_dnnl*.so"):
        stale.unlink()
    setup(cffi_modules=["native/build_dnnl.py:ffibuilder"])
