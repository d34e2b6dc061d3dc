"""Exceptions raised by the spider engine.

The tree::

    SpiderError                      base of everything the engine raises on purpose
    ├── EngineTransientError         retrying later may succeed (network, timeouts, locks)
    │   └── LLMError                 the LLM pass could not finish; the ranker's list stands
    │       ├── LLMUnavailable       the server failed, timed out or refused after retries
    │       ├── LLMBudgetExhausted   the issue's budget of tokens or seconds is spent
    │       └── LLMAnswerInvalid     the answer had no usable verdict (no log-probabilities, bad JSON)
    └── EnginePermanentError         retrying will not help; the input must change
        ├── InputError               bad user input (path, issue text, options)
        │   ├── RepositoryNotFound   the path does not exist or is not a directory
        │   ├── EmptyIssue           the issue has no text to search with
        │   ├── NoSourceFiles        nothing in the tree is a supported source file
        │   └── InvalidSetting       a setting or option has a value the engine cannot use
        ├── SourceError              a git tree or blob could not be read
        ├── IndexFormatError         a saved graph or cache file is unreadable
        ├── WeightsFormatError       a coefficients file is missing, malformed or stale
        ├── RenderError              the comment could not be rendered in full
        ├── FeatureInputsMissing     features asked of a first stage ranked without them
        └── ModelLoadError           the embedding model could not be loaded offline
            └── EncoderDeltaError    a tuned encoder delta is missing, malformed or for other weights

Callers (the CLI, the worker, the benchmark) catch ``SpiderError``: they turn
EnginePermanentError into a clear message and EngineTransientError into a retry. The
names differ from the bot's and the worker's own trees on purpose.
"""

from __future__ import annotations


class SpiderError(Exception):
    """Base class for errors raised deliberately by the engine."""


class EngineTransientError(SpiderError):
    """A failure that may go away when retried (network, timeouts, contention)."""


class EnginePermanentError(SpiderError):
    """A failure that retrying cannot fix."""


class LLMError(EngineTransientError):
    """The LLM pass could not finish: the engine keeps the ranker's list and says why."""


class LLMUnavailable(LLMError):
    """The LLM server failed, timed out or refused the request after its retries."""


class LLMBudgetExhausted(LLMError):
    """The issue's budget of LLM tokens or seconds is spent."""


class LLMAnswerInvalid(LLMError):
    """The model's answer held no usable verdict (no log-probabilities, malformed JSON)."""


class InputError(EnginePermanentError):
    """Invalid input given by a user: a path, an issue text, an option."""


class RepositoryNotFound(InputError):
    """The repository path does not exist or is not a directory."""


class EmptyIssue(InputError):
    """The issue text is empty after stripping whitespace."""


class NoSourceFiles(InputError):
    """The repository holds no file in a supported language (after exclusions)."""


class InvalidSetting(InputError, ValueError):
    """A setting or option value the engine cannot use (also a ValueError, for pydantic)."""


class SourceError(EnginePermanentError):
    """A git tree or blob could not be listed or read."""


class IndexFormatError(EnginePermanentError):
    """A saved graph or cache file could not be read back."""


class WeightsFormatError(EnginePermanentError):
    """A shipped or given coefficients file is missing, malformed or names unknown features."""


class FeatureInputsMissing(EnginePermanentError):
    """Learned-stage features were asked of a first stage ranked without their inputs
    (``first_stage(..., learned=False)``): a caller's mistake, not a data problem."""


class ModelLoadError(EnginePermanentError):
    """The sentence-transformers model could not be loaded without a network."""


class EncoderDeltaError(ModelLoadError):
    """An encoder delta (the tuned weights' LoRA file) is missing, malformed or was made
    for other base weights: the message names the file and the command that regenerates it."""


class RenderError(EnginePermanentError):
    """The comment could not be rendered in full (template error, unsafe link, too long)."""
