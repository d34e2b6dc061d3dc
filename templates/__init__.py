"""The templates of what the app writes: the comment (``*.md.j2``, Markdown) and the
``spider-bot report`` page (``report.html.j2``, HTML, autoescaped).

Installed as the ``spider_templates`` package (``pyproject.toml`` maps it to this folder);
found by ``spider.comment.render.shipped_templates``. ``SPIDER_TEMPLATE_DIR`` overrides any
of them file by file. This module holds no code: it makes the folder a package.
"""
