"""Optional LLM judge for free-form answers (off by default).

When rule-based extraction finds no option in a reply (``parse_fail``), a
judge model (any backend spec: ``openai:gpt-4o-mini``, ``hf:...``) is asked
which option the reply chooses. Its verdict must itself be a strict option
letter; "none" keeps the row a ``parse_fail``; anything else, or a judge
that fails, is a ``judge_error`` -- never a guess. A failed verdict carries its
reason (stored as the row's ``error``) and, when the judge's backend failed
(``api_error``, ``timeout`` ...), that status as ``cause``: the runner stops a
run whose judge failed that way on ``ABORT_AFTER`` replies in a row, as it does
for a dead model. The judge model's spec,
fingerprint and prompt template are recorded in ``run.json`` and
``metrics.json`` (``run.judge``); each judged row's ``rule`` starts with ``judge``.

VLMEvalKit's MVTamperBench scorer has the same optional last step (an LLM
judge after its rule-based matcher); this is our own prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmrobust.extract import Extraction, extract
from mmrobust.models.base import Model, Request
from mmrobust.redact import clip
from mmrobust.status import Status

JUDGE_PROMPT = (
    "You are checking which option a model's answer to a multiple-choice question chooses.\n"
    "Question: {question}\n"
    "Options:\n{options}\n"
    "Model's answer: {reply}\n\n"
    "Which option does the model's answer choose? Reply with the option letter only "
    "({letters}), or with the word none if it chooses no option or more than one."
)
"""Template of the judge's prompt (recorded in the run)."""


def judge_prompt(question: str, options: Mapping[str, str], reply: str) -> str:
    """The judge's prompt for one reply."""
    return JUDGE_PROMPT.format(
        question=question,
        options="\n".join(f"{k}. {v}" for k, v in options.items()),
        reply=reply.strip() or "(empty)",
        letters=", ".join(options),
    )


@dataclass(frozen=True)
class Verdict(Extraction):
    """An extraction decided by the judge.

    Attributes:
        error: why the judge gave no verdict (``judge_error`` only), one line.
        cause: the judge backend's own failure status (``api_error``, ``timeout``,
            ``rate_limited``, ``model_error`` ...), or ``None`` when it answered.
    """

    error: str | None = None
    cause: Status | None = None


@dataclass
class Judge:
    """A model that turns a free-form reply into an option letter.

    Args:
        model: any backend; its ``media_input`` is ignored (the judge sees text only).
        spec: the model spec, for the record.
    """

    model: Model
    spec: str

    def describe(self) -> dict[str, Any]:
        """What goes into ``run.json``: spec, fingerprint and prompt template."""
        return {"model": self.spec, "fingerprint": self.model.fingerprint(), "prompt": JUDGE_PROMPT}

    def __call__(
        self, sample_id: str, question: str, options: Mapping[str, str], reply: str
    ) -> Verdict:
        """Ask the judge; return ``ok`` with a letter, ``parse_fail`` ("none") or ``judge_error``.

        Never raises: a judge backend that raises or fails gives ``judge_error``
        with ``error`` (the reason) and ``cause`` (the backend's status) set.
        """
        req = Request(
            sample_id=f"judge:{sample_id}",
            prompt=judge_prompt(question, options, reply),
            question=question,
            options=options,
        )
        try:
            resp = self.model.generate([req])[0]
        except Exception as exc:  # a judge backend failing is a typed status, not a crash
            reason = clip(f"judge raised {type(exc).__name__}: {exc}".splitlines()[0], 300)
            return Verdict(
                None,
                Status.JUDGE_ERROR,
                f"judge:error:{type(exc).__name__}",
                error=reason,
                cause=Status.MODEL_ERROR,
            )
        if resp.status is not Status.OK:
            return Verdict(
                None,
                Status.JUDGE_ERROR,
                f"judge:{resp.status.value}",
                error=f"judge {resp.status.value}: {resp.error or 'no detail'}",
                cause=resp.status,
            )
        verdict = extract(resp.text, options, mode="strict")
        if verdict.status is Status.OK:
            return Verdict(verdict.letter, Status.OK, "judge")
        if re.fullmatch(r"\W*none\W*", resp.text.strip(), flags=re.IGNORECASE):
            return Verdict(None, Status.PARSE_FAIL, "judge:none")
        return Verdict(
            None,
            Status.JUDGE_ERROR,
            "judge:unparseable-verdict",
            error=f"judge reply is no option letter: {clip(resp.text, 120)!r}",
        )


def load_judge(spec: str, model_args: Mapping[str, str] | None = None) -> Judge:
    """Build the judge a model spec names.

    Raises:
        UnknownNameError, ValueError: bad spec or arguments.
    """
    from mmrobust.models.spec import load_model

    return Judge(model=load_model(spec, model_args), spec=spec)


__all__ = ["JUDGE_PROMPT", "Judge", "Verdict", "judge_prompt", "load_judge"]
