"""The comment the app posts, rendered from a Localization: view model, safe Markdown, templates.

It lives in the engine so that ``spider locate --format markdown`` prints exactly what the
app would post; the worker renders through the same functions.
"""

from spider.comment.render import MARKER, build_too_large_view, build_view, render

__all__ = ["MARKER", "build_too_large_view", "build_view", "render"]
