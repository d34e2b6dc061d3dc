"""An LLM that reads the code: the configured model (an OpenAI-compatible server or
Claude), one issue's pass with its budget, the prompts, and the reader role. The selector
role lives with the other selectors (``spider.expand.select.llm_selector``)."""

from spider.llm.backends import AnthropicBackend, Backend, OpenAICompatible, make_backend
from spider.llm.budget import Budget, Usage
from spider.llm.judge import Judge
from spider.llm.reader import Reading, read_list

__all__ = [
    "AnthropicBackend",
    "Backend",
    "Budget",
    "Judge",
    "OpenAICompatible",
    "Reading",
    "Usage",
    "make_backend",
    "read_list",
]
