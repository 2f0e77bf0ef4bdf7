"""Executors: binding a Symbol to arrays, and running it."""
from .executor import Executor, bind, simple_bind
from .runner import GraphRunner

__all__ = ["Executor", "GraphRunner", "bind", "simple_bind"]
