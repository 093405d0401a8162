"""Finding model files: a local directory, or a Hub id already in the Hugging Face cache (downloaded
when online). Offline, a missing model is a clear error naming it and how to provide it."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from scoring.faults import HubUnreachable, is_transient
from scoring.registry import MetricError


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str  # what was asked for (Hub id or path)
    path: Path  # local directory with the files
    revision: str  # Hub commit, or "local:<hash of config>" for a directory

    def describe(self) -> dict[str, str]:
        return {"model": self.model_id, "model_revision": self.revision}


def _local_revision(path: Path) -> str:
    # A directory has no commit; hash its small config files so two different local models differ.
    h = hashlib.sha256()
    for name in sorted(os.listdir(path)):
        p = path / name
        if p.is_file() and p.suffix in {".json", ".yaml", ".yml"} and p.stat().st_size < 1_000_000:
            h.update(name.encode())
            h.update(p.read_bytes())
    return "local:" + h.hexdigest()[:16]


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}


def resolve_model(model: str, metric: str, revision: str | None = None) -> ResolvedModel:
    path = Path(os.path.expanduser(model))
    if path.is_dir():
        return ResolvedModel(model, path.resolve(), _local_revision(path))
    if path.is_absolute() or model.startswith("."):
        raise MetricError(f"{metric}: model directory {model} does not exist")
    from huggingface_hub import snapshot_download

    try:
        local = snapshot_download(model, revision=revision, local_files_only=True)
    except Exception:
        local = None
        if not offline():
            try:
                local = snapshot_download(model, revision=revision)
            except Exception as exc:  # no network, gated model, unknown id
                reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                if is_transient(exc):  # the Hub is down or the network cut: a later try may get it
                    raise HubUnreachable(
                        f"{metric}: model {model!r} could not be downloaded: the Hub is unreachable now ({reason}); "
                        f"a worker retries, or pass --model DIR / model=DIR with a local copy"
                    ) from None
            else:
                reason = ""
        else:
            reason = "HF_HUB_OFFLINE is set"
        if local is None:
            raise MetricError(
                f"{metric}: model {model!r} is not in the Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')}) "
                f"and cannot be downloaded ({reason}). Provide it: run `huggingface-cli download {model}` where the Hub "
                f"is reachable and copy the cache here (HF_HOME), or pass --model DIR / model=DIR with a local copy."
            ) from None
    local_path = Path(local)
    return ResolvedModel(
        model, local_path, local_path.name if len(local_path.name) == 40 else _local_revision(local_path)
    )


def torch_device(device: str | None) -> str:
    import torch

    if device:
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise MetricError(f"device {device!r} asked for but no CUDA GPU is visible to this worker")
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(dtype: str | None, device: str):
    import torch

    name = dtype or "float32"
    try:
        value = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]
    except KeyError:
        raise MetricError(f"dtype {dtype!r} not supported; use float32, float16 or bfloat16") from None
    return name, value


DTYPE_NAMES = {
    "float32": "float32",
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
}


def checkpoint_dtype(path: Path) -> str:
    """The dtype ``from_pretrained(torch_dtype="auto")`` would load: the config's ``torch_dtype`` (``dtype``
    in newer configs), else that of the first floating tensor of the weights, else float32."""
    import json
    import struct

    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    for key in ("torch_dtype", "dtype"):
        name = config.get(key)
        if isinstance(name, str) and name.replace("torch.", "") in DTYPE_NAMES:
            return DTYPE_NAMES[name.replace("torch.", "")]
    for weights in sorted(path.glob("*.safetensors")):
        with open(weights, "rb") as f:
            header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
        for key, info in header.items():
            if key != "__metadata__" and info.get("dtype") in DTYPE_NAMES:
                return DTYPE_NAMES[info["dtype"]]
    if (path / "pytorch_model.bin").exists():
        import torch

        state = torch.load(path / "pytorch_model.bin", map_location="meta", weights_only=True)
        for tensor in state.values():
            if tensor.is_floating_point():
                return DTYPE_NAMES[str(tensor.dtype).replace("torch.", "")]
    return "float32"


def library_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"
