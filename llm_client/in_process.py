"""vLLM's in-process engine, as the injection backend (``injection.backends.vllm_engine``) and the judge backend
(``scoring.judges.backends``) both run it: the import, the one engine a worker process keeps loaded, and the
sampling parameters of one decoding. ``vllm`` is imported only when called; each caller says in its own words
what to install where it is missing.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
from collections.abc import Callable, Hashable

logger = logging.getLogger(__name__)


def import_vllm():
    """The ``vllm`` module (ImportError where it is not installed)."""
    if multiprocessing.current_process().daemon:
        # A Celery prefork child is daemonic and may not start processes: run vLLM's engine core in this
        # process instead of its own (vLLM reads the variable when the engine is built).
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    import vllm

    return vllm


class EngineSlot:
    """The one engine a worker process keeps loaded, for the next run of the same model and options (loading
    a 7B model takes longer than many runs' generation)."""

    def __init__(self) -> None:
        self.key: Hashable = None
        self.engine = None

    def get(self, key: Hashable, load: Callable[[], object]):
        """The engine loaded for ``key``; another key's engine is released first, its memory freed."""
        if self.key != key:
            self.release()
            self.key, self.engine = key, load()
        return self.engine

    def release(self) -> None:
        """Shut the loaded engine down and free its memory (KV cache, weights): dropping the reference is not
        enough, the engine core (a process that keeps the interpreter alive) and vLLM's process groups hold on
        to it."""
        engine, self.key, self.engine = self.engine, None, None
        if engine is None:
            return
        try:
            engine.llm_engine.engine_core.shutdown()
        except Exception:  # a dead engine may not shut down cleanly; its memory is freed below all the same
            logger.warning("vLLM engine did not shut down cleanly", exc_info=True)
        del engine
        try:
            from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
        except ImportError:
            gc.collect()
        else:
            cleanup_dist_env_and_memory()


def sampling_params(vllm, *, temperature: float, max_tokens: int, seed: int | None, json_schema: dict | None):
    """vLLM's ``SamplingParams`` for one decoding; ``json_schema`` (a ``response_format`` JSON schema) constrains
    the answer through structured outputs (newer vLLM) or guided decoding (older releases)."""
    kwargs = {"temperature": temperature, "max_tokens": max_tokens}
    if seed is not None:
        kwargs["seed"] = seed
    if json_schema:
        module = vllm.sampling_params
        if hasattr(module, "StructuredOutputsParams"):
            kwargs["structured_outputs"] = module.StructuredOutputsParams(json=json_schema["schema"])
        elif hasattr(module, "GuidedDecodingParams"):
            kwargs["guided_decoding"] = module.GuidedDecodingParams(json=json_schema["schema"])
    return vllm.SamplingParams(**kwargs)
