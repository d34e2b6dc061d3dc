"""Exceptions raised by the spider engine.

The tree::

    SpiderError                      base of everything the engine raises on purpose
    ├── TransientError               retrying later may succeed (network, timeouts, locks)
    │   └── SelectorUnavailable      the selector's service failed after its retries
    └── PermanentError               retrying will not help; the input must change
        ├── InputError               bad user input (path, issue text, options)
        │   ├── RepositoryNotFound   the path does not exist or is not a directory
        │   ├── EmptyIssue           the issue has no text to search with
        │   └── NoSourceFiles        nothing in the tree is a supported source file
        ├── SourceError              a git tree or blob could not be read
        ├── IndexFormatError         a saved graph or cache file is unreadable
        └── ModelLoadError           the embedding model could not be loaded offline

Callers (the CLI, the worker) turn PermanentError into a clear message and
TransientError into a retry.
"""

from __future__ import annotations


class SpiderError(Exception):
    """Base class for errors raised deliberately by the engine."""


class TransientError(SpiderError):
    """A failure that may go away when retried (network, timeouts, contention)."""


class PermanentError(SpiderError):
    """A failure that retrying cannot fix."""


class InputError(PermanentError):
    """Invalid input given by a user: a path, an issue text, an option."""


class RepositoryNotFound(InputError):
    """The repository path does not exist or is not a directory."""


class EmptyIssue(InputError):
    """The issue text is empty after stripping whitespace."""


class NoSourceFiles(InputError):
    """The repository holds no file in a supported language (after exclusions)."""


class SourceError(PermanentError):
    """A git tree or blob could not be listed or read."""


class IndexFormatError(PermanentError):
    """A saved graph or cache file could not be read back."""


class WeightsFormatError(PermanentError):
    """A shipped or given coefficients file is missing, malformed or names unknown features."""


class ModelLoadError(PermanentError):
    """The sentence-transformers model could not be loaded without a network."""


class SelectorUnavailable(TransientError):
    """The selector's backing service failed after all retries."""
