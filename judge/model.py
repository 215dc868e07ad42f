"""The embedded judge's scorer: a logistic regression over ``judge.features``, with the
logit threshold per domain. Fitted by ``judge.training``; stored as JSON in
``judge/weights/``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .features import FEATURES

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Model:
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    thresholds: dict[str, float]

    def logits(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.coef + self.intercept

    def as_json(self) -> dict:
        return {
            "features": list(FEATURES),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "coef": [round(float(v), 8) for v in self.coef],
            "intercept": round(float(self.intercept), 8),
            "thresholds": {k: round(float(v), 6) for k, v in sorted(self.thresholds.items())},
        }

    @classmethod
    def from_json(cls, data: dict) -> Model:
        import numpy as np

        if list(data["features"]) != list(FEATURES):
            raise ValueError("the weights were fitted on other features than judge.features'")
        return cls(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=float(data["intercept"]),
            thresholds={k: float(v) for k, v in data["thresholds"].items()},
        )
