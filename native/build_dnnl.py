"""cffi builder (out-of-line, API mode) for the extension module ``minimx._dnnl``.

setup.py hands ``ffibuilder`` to cffi through ``cffi_modules``; a developer
can also run ``python native/build_dnnl.py`` to compile the module into
``minimx/`` (replacing any earlier build there).

oneDNN v3 is looked for, in order, in:
1. ``MINIMX_DNNL_ROOT`` (``include/oneapi/dnnl/dnnl.h`` and ``lib/libdnnl.so*``);
   when set, nothing else is tried, so a wrong root is reported, not hidden;
2. the ``onednn-devel-cpu-gomp`` / ``onednn-cpu-gomp`` wheels installed in the
   running (build) environment, found through their installed-file records,
   because pip's isolated build environment is not ``sys.prefix``;
3. ``sys.prefix``, ``/usr/local`` and ``/usr``.
A v2 oneDNN (Debian's ``libdnnl-dev``) is skipped: the shim needs the v3 API.
When none is found ``ffibuilder`` is None and setup.py builds without it.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
HEADER = HERE / "minimx_dnnl.h"
SHIM = HERE / "minimx_dnnl.c"
LIB_NAMES = ("libdnnl.so", "libdnnl.so.3")

MISSING_HELP = (
    "minimx: oneDNN v3 was not found, so minimx is built WITHOUT its native "
    "oneDNN backend (minimx._dnnl); everything else works.\n"
    "  To get it: pip install onednn-devel-cpu-gomp==2023.2.0 "
    "onednn-cpu-gomp==2023.2.0 and reinstall minimx,\n"
    "  or set MINIMX_DNNL_ROOT to a oneDNN v3 install (with include/ and lib/)."
)


# A NamedTuple, not a dataclass: cffi execs this file outside sys.modules.
class DnnlPaths(NamedTuple):
    """Where one oneDNN v3 install keeps its headers and its shared library."""

    include_dir: Path
    library: Path
    origin: str


def _major_version(include_dir: Path) -> int | None:
    version_h = include_dir / "oneapi" / "dnnl" / "dnnl_version.h"
    if not version_h.is_file():
        return None
    match = re.search(r"#define\s+DNNL_VERSION_MAJOR\s+(\d+)", version_h.read_text())
    return int(match.group(1)) if match else None


def _library_in(lib_dir: Path) -> Path | None:
    for name in LIB_NAMES:
        if (lib_dir / name).is_file():
            return lib_dir / name
    return None


def _at_prefix(prefix: Path, origin: str) -> DnnlPaths | None:
    include_dir = prefix / "include"
    if _major_version(include_dir) != 3:
        return None
    for lib_dir in (prefix / "lib", prefix / "lib64"):
        library = _library_in(lib_dir)
        if library is not None:
            return DnnlPaths(include_dir, library, origin)
    return None


def _from_wheels() -> DnnlPaths | None:
    try:
        devel = metadata.distribution("onednn-devel-cpu-gomp")
        runtime = metadata.distribution("onednn-cpu-gomp")
    except metadata.PackageNotFoundError:
        return None
    header = next((Path(devel.locate_file(f)).resolve() for f in devel.files or ()
                   if f.as_posix().endswith("oneapi/dnnl/dnnl.h")), None)
    libs = {f.name: Path(runtime.locate_file(f)).resolve() for f in runtime.files or ()}
    library = next((libs[n] for n in LIB_NAMES if n in libs and libs[n].is_file()), None)
    if header is None or library is None:
        return None
    include_dir = header.parent.parent.parent
    if _major_version(include_dir) != 3:
        return None
    return DnnlPaths(include_dir, library, f"onednn wheels {devel.version}")


def find_dnnl() -> DnnlPaths | None:
    """The oneDNN v3 install to build against, or None (see the module docstring)."""
    root = os.environ.get("MINIMX_DNNL_ROOT")
    if root:
        return _at_prefix(Path(root), f"MINIMX_DNNL_ROOT={root}")
    found = _from_wheels()
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        found = found or _at_prefix(Path(prefix), prefix)
    return found


# The Winograd transforms are plain C loops over 16 channels that the
# compiler vectorizes: for the CPU building them (minimx always builds from
# source), with 512-bit vectors where it has them, in the OpenMP runtime
# (libgomp) that oneDNN's gomp build runs its threads in.
KERNEL_FLAGS = ["-O3", "-fopenmp"] + (
    ["-march=native", "-mprefer-vector-width=512"]
    if platform.machine() in ("x86_64", "AMD64") else [])


def make_builder(paths: DnnlPaths, shim: str = "native/minimx_dnnl.c"):
    """A cffi FFI whose cdef is the shim's header, compiled with the shim.

    ``shim`` is relative to the project root, as setuptools insists.
    """
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(HEADER.read_text())
    # Python functions the C side calls (the jobs of the oneDNN thread).
    ffi.cdef('extern "Python" int mmx_python_job(void *);')
    ffi.set_source(
        "minimx._dnnl",
        '#include "oneapi/dnnl/dnnl.h"\n#include "minimx_dnnl.h"\n',
        sources=[shim, *(str(Path(shim).with_name(f))
                         for f in ("winograd.c", "own_kernel.c", "depthwise_u8.c",
                                   "pointwise_u8.c", "nhwc_input.c", "first_conv.c",
                                   "pointwise_depthwise.c", "worker.c"))],
        include_dirs=[str(paths.include_dir), str(HERE)],
        # Linked by file so that a lone libdnnl.so.3 (no dev symlink) works too.
        # No rpath: minimx.onednn preloads the library before importing us.
        extra_objects=[str(paths.library)],
        extra_compile_args=["-std=gnu11", "-Wall", *KERNEL_FLAGS],
        extra_link_args=["-fopenmp"],
        # A failed compile leaves minimx installable, just without the backend.
        optional=True,
    )
    return ffi


_paths = find_dnnl()
ffibuilder = make_builder(_paths) if _paths is not None else None

if __name__ == "__main__":
    if ffibuilder is None:
        sys.exit(MISSING_HELP)
    print(f"minimx: building minimx._dnnl against {_paths.origin}")
    # cffi compiles from inside tmpdir, so the shim's path must be absolute here.
    built = make_builder(_paths, str(SHIM)).compile(
        tmpdir=str(HERE.parent / "build" / "cffi"), verbose=True)
    # An older build under another suffix (pip's is _dnnl.abi3.so) would shadow this one.
    for stale in (HERE.parent / "minimx").glob("_dnnl*.so"):
        stale.unlink()
    shutil.copy(built, HERE.parent / "minimx")
