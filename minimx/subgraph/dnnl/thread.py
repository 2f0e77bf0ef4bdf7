"""One OS thread does all of the DNNL backend's oneDNN work.

Why: libgomp gives each thread that enters a parallel region an OpenMP team
of its own. The engine runs operations on several worker threads, and the
weight cache reorders on whichever thread compiles, so oneDNN called from
them would build several teams, and a team that just finished spins on the
cores the next one needs: on 2 cores, MobileNet v1 at batch 1 ran about
1.4x slower than with every call on one thread. Compiling, refreshing the
weight cache and running plans all go through `on_onednn_thread`; the hop
costs tens of microseconds per subgraph run.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minimx-onednn")
_ident: list[int] = []


def _remember() -> None:
    _ident.append(threading.get_ident())


_pool.submit(_remember).result()


def on_onednn_thread(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` run on the oneDNN thread (directly when already on it)."""
    if threading.get_ident() == _ident[0]:
        return fn(*args)
    return _pool.submit(fn, *args).result()
