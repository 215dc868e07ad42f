"""The embedded judge's scorer: a logistic regression over ``judge.features``, with the
logit threshold per domain. Fitted by ``judge.training``; stored as JSON in
``judge/weights/``.

A registry of fewer than ``SMALL_REGISTRY`` blockers is scored by ``small``: a second
regression fitted the same way on ``PLAIN_FEATURES`` only (the information-gap features mean
nothing the model learnt on registries smaller than any it was fitted on; ``judge.features``).
Its logits are shifted per domain by ``offset`` (the main threshold minus its own, chosen the
same way on out-of-fold logits), so one threshold per domain decides for both models and a
project's calibration moves both alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .features import FEATURES, PLAIN_FEATURES, SMALL_REGISTRY

if TYPE_CHECKING:
    import numpy as np

_DOMAIN = FEATURES.index("domain_swe")


@dataclass(frozen=True)
class Model:
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    thresholds: dict[str, float]
    # Which columns of FEATURES it reads (None: every one).
    columns: tuple[int, ...] | None = None
    # The model of registries smaller than SMALL_REGISTRY, and its shift per domain.
    small: Model | None = None
    offset: dict[str, float] = field(default_factory=dict)

    def logits(self, rows: np.ndarray) -> np.ndarray:
        if self.small is not None and len(rows) < SMALL_REGISTRY:
            return self.small.logits(rows)
        x = rows if self.columns is None else rows[:, list(self.columns)]
        out = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        if self.offset and len(rows):
            import numpy as np

            swe = rows[:, _DOMAIN] > 0.5
            out = out + np.where(swe, self.offset.get("swe", 0.0), self.offset.get("sql", 0.0))
        return out

    def as_json(self) -> dict:
        names = FEATURES if self.columns is None else [FEATURES[c] for c in self.columns]
        out = {
            "features": list(names),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "coef": [round(float(v), 8) for v in self.coef],
            "intercept": round(float(self.intercept), 8),
            "thresholds": {k: round(float(v), 6) for k, v in sorted(self.thresholds.items())},
        }
        if self.offset:
            out["offset"] = {k: round(float(v), 6) for k, v in sorted(self.offset.items())}
        if self.small is not None:
            out["small"] = self.small.as_json()
        return out

    @classmethod
    def from_json(cls, data: dict) -> Model:
        import numpy as np

        names = list(data["features"])
        if names == list(FEATURES):
            columns = None
        elif names == list(PLAIN_FEATURES):  # a small model, or weights from before the gap
            columns = tuple(FEATURES.index(name) for name in names)
        else:
            raise ValueError("the weights were fitted on other features than judge.features'")
        return cls(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=float(data["intercept"]),
            thresholds={k: float(v) for k, v in data["thresholds"].items()},
            columns=columns,
            small=cls.from_json(data["small"]) if data.get("small") else None,
            offset={k: float(v) for k, v in data.get("offset", {}).items()},
        )
