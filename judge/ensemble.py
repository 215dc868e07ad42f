"""Two judges in one: the embedded judge first, the LLM judge only where it hesitates.

When the embedded judge's best logit lies within ``band`` of its threshold — the questions
it is least sure of — the LLM judge decides; elsewhere (and for questions the form rules turn
away, vague or multi-topic messages) the embedded verdict stands. The LLM's failures propagate
(``JudgeError``), never an "irrelevant". The version names both judges and the band
(``long_version``); what is stored with verdicts is that, or when it passes the columns'
100 characters (a long model name), its start and a hash of it (``base.version_fit``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import RegistryBlocker, Verdict, version_fit
from .embedded import EmbeddedJudge, registry_domain


class EnsembleJudge:
    def __init__(self, embedded: EmbeddedJudge, llm, *, band: float):
        self.embedded, self.llm, self.band = embedded, llm, band
        self.long_version = f"ensemble-{embedded.version}+{llm.version}:{band:g}"
        self.version = version_fit(self.long_version)

    def judge(
        self,
        question: str,
        registry: Sequence[RegistryBlocker],
        domain: str | None = None,
        context: str = "",
    ) -> Verdict:
        domain = domain or registry_domain(registry)
        verdict = self.embedded.judge(question, registry, domain=domain, context=context)
        # The rules' refusals (form, vague, multi-topic) stand: they carry no scores or say so.
        if not verdict.scores or verdict.reason.startswith("multi-topic"):
            return verdict
        threshold = self.embedded.thresholds.get(domain, max(self.embedded.thresholds.values()))
        best = max(verdict.scores.values())
        if abs(best - threshold) >= self.band:
            return Verdict(verdict.blocker_id, f"embedded: {verdict.reason}", verdict.scores)
        second = self.llm.judge(question, list(registry))
        return Verdict(
            second.blocker_id,
            f"LLM (embedded best {best:.2f} within {self.band:g} of {threshold:.2f}): "
            f"{second.reason}",
            verdict.scores,
        )
