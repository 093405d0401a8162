"""Estimated cost of LLM calls. Pure Python (no Django).

Prices are USD per million tokens (input, output), list prices at the time of writing; override or add
models with LLM_PRICES='{"my-model": [0.5, 1.5]}' (INJECTION_PRICES is read too, for older setups). Unknown models (a local vLLM server) cost 0:
the estimate is for billing APIs, not for GPUs you already run.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}


def prices() -> dict[str, tuple[float, float]]:
    table = dict(PRICES_PER_MILLION)
    for name in ("INJECTION_PRICES", "LLM_PRICES"):
        extra = os.environ.get(name, "")
        if extra:
            try:
                table.update({k: (float(v[0]), float(v[1])) for k, v in json.loads(extra).items()})
            except (ValueError, TypeError, IndexError, AttributeError) as exc:
                raise ValueError(f"{name} is not a JSON object of [input, output] prices: {exc}") from None
    return table


def known_price(model: str) -> bool:
    return model in prices()


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int, discount: float = 0.0) -> Decimal:
    price = prices().get(model)
    if price is None:
        return Decimal(0)
    usd = (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000 * (1 - discount)
    return Decimal(str(round(usd, 6)))
