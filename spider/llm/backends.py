"""The LLMs the roles can talk to: any OpenAI-compatible chat-completions server, or Claude.

Both speak through their vendor's well-kept client (``openai``, ``anthropic``), which
retries failed requests with exponential backoff (``max_retries``) and honours
``retry-after``; a request's timeout is the setting's, never more than the issue's budget
has left. Two kinds of question:

- :meth:`Backend.yes_no`: one pointwise question, answered by the log-odds of "Yes" over
  "No" as the first token (needs the server's log-probabilities: OpenAI-compatible only);
- :meth:`Backend.choose`: a listwise question whose answer is a JSON list of ids,
  constrained by a JSON schema where the server takes one and always validated.

A request that fails after the client's retries raises
:class:`~spider.errors.LLMUnavailable`; an answer with no usable verdict raises
:class:`~spider.errors.LLMAnswerInvalid`. Either way the budget is charged.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from spider.errors import InvalidSetting, LLMAnswerInvalid, LLMUnavailable
from spider.llm.budget import Budget
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

TOP_LOGPROBS = 20  # alternatives asked for the first token: "Yes"/"No" are nearly always in
CHOOSE_MAX_TOKENS = 1024  # a listwise answer is a short JSON list of ids
TOKENS_PER_ID = 32  # a listwise answer's length: an id is rarely longer than this in tokens
UNSEEN_MARGIN = 1.0  # a verdict token not among the alternatives: this far below the last one
YES = frozenset({"yes"})
NO = frozenset({"no"})
_JSON_BLOCK = re.compile(r"\{.*\}|\[.*\]", re.DOTALL)


class Backend(Protocol):
    """One configured LLM."""

    kind: str  # "llm" (an OpenAI-compatible server) or "anthropic"
    model: str
    has_logprobs: bool  # whether yes_no can work

    def yes_no(self, messages: list[dict[str, str]], budget: Budget) -> float:
        """Log-odds of "Yes" over "No" as the answer's first token."""
        ...

    def choose(self, system: str, user: str, key: str, ids: Sequence[str],
               budget: Budget) -> list[str]:
        """The ids of a JSON answer ``{key: [...]}`` (only ``ids`` are allowed)."""
        ...


def parse_ids(text: str, key: str) -> list[str]:
    """Ids from a JSON answer ``{key: [...]}`` (or a bare list); [] when the answer is not
    JSON of that shape."""
    match = _JSON_BLOCK.search(text or "")
    if not match:
        return []
    try:
        data: Any = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    if isinstance(data, dict):
        data = data.get(key, [])
    if not isinstance(data, list):
        return []
    return [x for x in data if isinstance(x, str)]


def verdict_log_odds(alternatives: Sequence[tuple[str, float]]) -> float:
    """Log-odds of yes over no from the first token's alternatives (token, log-probability).

    Variants of a word (``Yes``, `` yes``, ``YES``) are pooled. A word missing from the
    alternatives is given a log-probability :data:`UNSEEN_MARGIN` below the least likely
    one listed; with neither word listed there is no verdict."""
    if not alternatives:
        raise LLMAnswerInvalid("the server returned no log-probabilities")
    floor = min(lp for _, lp in alternatives) - UNSEEN_MARGIN

    def pooled(words: frozenset[str]) -> float | None:
        lps = [lp for tok, lp in alternatives if tok.strip().lower() in words]
        return math.log(sum(math.exp(lp) for lp in lps)) if lps else None

    yes, no = pooled(YES), pooled(NO)
    if yes is None and no is None:
        raise LLMAnswerInvalid("neither Yes nor No among the answer's likely first tokens")
    return (yes if yes is not None else floor) - (no if no is not None else floor)


def answer_tokens(ids: Sequence[str]) -> int:
    """The most tokens a listwise answer naming each of ``ids`` once can need."""
    return min(CHOOSE_MAX_TOKENS, TOKENS_PER_ID * (len(ids) + 1))


def id_schema(key: str, ids: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a listwise answer: ``{key: [one of ids, ...]}``."""
    return {
        "type": "object",
        "properties": {key: {"type": "array", "items": {"type": "string", "enum": list(ids)},
                             "maxItems": len(ids)}},
        "required": [key],
        "additionalProperties": False,
    }


@dataclass
class OpenAICompatible:
    """A chat-completions server: Ollama, the llama.cpp server, vLLM, LM Studio, a proxy."""

    settings: EngineSettings
    client: Any = None
    kind: str = "llm"
    has_logprobs: bool = True
    schema_ok: bool = True  # cleared once the server refuses a response_format

    def __post_init__(self) -> None:
        s = self.settings
        if s.llm_base_url is None:
            raise InvalidSetting("the LLM roles need SPIDER_LLM_BASE_URL (a chat-completions server)")
        if not s.llm_model.strip():
            raise InvalidSetting(
                "SPIDER_LLM_MODEL is empty: name the model the server at "
                f"{s.llm_base_url} serves (e.g. qwen2.5-coder:1.5b for Ollama)"
            )
        if self.client is None:
            import openai

            key = s.llm_api_key.get_secret_value() if s.llm_api_key is not None else "none"
            self.client = openai.OpenAI(
                base_url=s.llm_base_url, api_key=key, timeout=s.llm_timeout_s,
                max_retries=s.llm_max_retries,
            )
        self.model = s.llm_model_name

    def _create(self, budget: Budget, **kw: Any) -> Any:
        """One request under the budget; usage charged whatever happens."""
        import openai

        budget.check()
        timeout = min(self.settings.llm_timeout_s, max(1.0, budget.remaining_s()))
        t0 = time.monotonic()
        try:
            resp = self.client.with_options(timeout=timeout).chat.completions.create(
                model=self.model, temperature=0, **kw
            )
        except openai.BadRequestError:
            budget.failed_request(t0)
            raise
        except openai.OpenAIError as exc:
            budget.failed_request(t0)
            raise LLMUnavailable(f"{self.settings.llm_base_url}: {type(exc).__name__}") from exc
        usage = getattr(resp, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        budget.answered(t0, getattr(usage, "prompt_tokens", 0),
                        getattr(usage, "completion_tokens", 0),
                        getattr(details, "cached_tokens", 0))
        if not getattr(resp, "choices", None):
            raise LLMAnswerInvalid("the server's answer holds no choice")
        return resp

    def yes_no(self, messages: list[dict[str, str]], budget: Budget) -> float:
        """Log-odds of "Yes" over "No" as the first answer token (one token generated; the
        llama.cpp server is asked to keep the shared prefix cached)."""
        resp = self._create(
            budget, messages=messages, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS,
            extra_body={"cache_prompt": self.settings.llm_prompt_cache},
        )
        content = getattr(getattr(resp.choices[0], "logprobs", None), "content", None) or []
        if not content:
            self.has_logprobs = False
            raise LLMAnswerInvalid("the server returned no log-probabilities")
        first = content[0]
        alts = [(t.token, float(t.logprob)) for t in (first.top_logprobs or [])]
        return verdict_log_odds(alts or [(first.token, float(first.logprob))])

    def choose(self, system: str, user: str, key: str, ids: Sequence[str],
               budget: Budget) -> list[str]:
        """A JSON list of ids, constrained by a schema where the server takes one."""
        import openai

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        kw: dict[str, Any] = {"messages": messages, "max_tokens": answer_tokens(ids)}
        if self.schema_ok:
            kw["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": id_schema(key, ids)},
            }
        try:
            resp = self._create(budget, **kw)
        except openai.BadRequestError:
            if not self.schema_ok:
                raise LLMUnavailable("the server refused the request (400)") from None
            log.info("LLM server refused a JSON schema; asking again without one")
            self.schema_ok = False
            return self.choose(system, user, key, ids, budget)
        return parse_ids(resp.choices[0].message.content or "", key)


@dataclass
class AnthropicBackend:
    """Claude through the Messages API (no log-probabilities: listwise questions only)."""

    settings: EngineSettings
    client: Any = None
    kind: str = "anthropic"
    has_logprobs: bool = False

    def __post_init__(self) -> None:
        s = self.settings
        if self.client is None:
            import anthropic

            if s.anthropic_api_key is None:
                raise InvalidSetting(
                    "the anthropic selector needs SPIDER_ANTHROPIC_API_KEY; "
                    "use selector=offline to run without it"
                )
            self.client = anthropic.Anthropic(
                api_key=s.anthropic_api_key.get_secret_value(), base_url=s.anthropic_base_url,
                timeout=s.anthropic_timeout_s, max_retries=s.anthropic_max_retries,
            )
        self.model = s.anthropic_model  # named even when a server is configured beside it

    def yes_no(self, messages: list[dict[str, str]], budget: Budget) -> float:
        """Not available: the Messages API returns no log-probabilities."""
        raise LLMAnswerInvalid("Claude returns no log-probabilities: use listwise questions")

    def choose(self, system: str, user: str, key: str, ids: Sequence[str],
               budget: Budget) -> list[str]:
        """One Messages call (the paper's temperature); the JSON answer's ids."""
        budget.check()
        t0 = time.monotonic()
        temperature = self.settings.anthropic_temperature
        try:
            msg = self.client.messages.create(
                model=self.model, max_tokens=CHOOSE_MAX_TOKENS, system=system,
                messages=[{"role": "user", "content": user}],
                # newer SDKs dropped the argument; the API still takes it for the paper's models
                extra_body={"temperature": temperature} if temperature is not None else None,
            )
        except Exception as exc:  # the SDK has already retried; any failure is the same here
            budget.failed_request(t0)
            raise LLMUnavailable(f"anthropic: {type(exc).__name__}") from exc
        usage = getattr(msg, "usage", None)
        budget.answered(t0, getattr(usage, "input_tokens", 0),
                        getattr(usage, "output_tokens", 0),
                        getattr(usage, "cache_read_input_tokens", 0))
        text = "".join(
            getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text"
        )
        return parse_ids(text, key)


def make_backend(settings: EngineSettings, kind: str | None = None) -> Backend:
    """The backend of ``kind`` (default: the configured one, :attr:`EngineSettings.llm_backend`)."""
    kind = kind or settings.llm_backend
    if kind == "llm":
        return OpenAICompatible(settings)
    if kind == "anthropic":
        return AnthropicBackend(settings)
    raise InvalidSetting(
        "no LLM is configured: set SPIDER_LLM_BASE_URL and SPIDER_LLM_MODEL (a "
        "chat-completions server) or SPIDER_ANTHROPIC_API_KEY"
    )
