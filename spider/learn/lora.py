"""Low-rank adapters on the bundled MiniLM: what the cross-encoder and the encoder delta share.

Both fits put LoRA adapters (``peft``) on every linear map of the six layers
(:data:`TARGET_MODULES`), train them, and ship only the factors (``A``: rank x in,
``B``: out x rank) as a LoRA body (:class:`spider.learn.model_file.LoraBody`), which
:mod:`spider.retrieve.delta` reads. Neither fit module borrows these from the other.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from spider.errors import InputError

TARGET_MODULES = r".*encoder\.layer\.\d+\..*(query|key|value|dense)$"


def torch_module() -> Any:
    """``torch``, or a clean error naming the version to install."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise InputError("training needs torch (pip install torch==2.13.0)") from exc
    return torch


def load_trainable(base_dir: str, rank: int, alpha: float, dropout: float) -> tuple[Any, Any]:
    """The bundled transformer with fresh LoRA adapters, and its tokenizer."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise InputError(
            f"tuning the encoder needs peft and transformers (pip install 'spider-bot[train]'): {exc}"
        ) from exc
    from spider.retrieve.dense import silence_progress_bars

    silence_progress_bars()
    tok = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModel.from_pretrained(base_dir)
    # peft's stub types lora_alpha as int; it is a float at run time (scaling = alpha / r)
    options: dict[str, Any] = {"r": rank, "lora_alpha": alpha, "lora_dropout": dropout}
    lora = LoraConfig(**options, target_modules=TARGET_MODULES)
    with warnings.catch_warnings():  # peft reads a transformers attribute deprecated in v5
        warnings.simplefilter("ignore", FutureWarning)
        return get_peft_model(model, lora), tok


def lora_factors(model: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``base weight name -> (A, B)`` of every adapter (A: rank x in, B: out x rank)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, module in model.named_modules():
        if not hasattr(module, "lora_A") or "default" not in getattr(module, "lora_A", {}):
            continue
        a = module.lora_A["default"].weight.detach().float().numpy()
        b = module.lora_B["default"].weight.detach().float().numpy()
        base = name.split("base_model.model.", 1)[-1] + ".weight"
        out[base] = (a, b)
    return out


def lora_state(model: Any) -> dict[str, Any]:
    """The adapters' tensors of ``model``'s state (what a checkpoint keeps of the model)."""
    return {k: v for k, v in model.state_dict().items() if "lora_" in k}


__all__ = ["TARGET_MODULES", "load_trainable", "lora_factors", "lora_state", "torch_module"]
