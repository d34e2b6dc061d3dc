from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from spider.comment.markdown import code, inline, plain

DANGEROUS = re.compile(
    r"(?<![\w\u200b])@[A-Za-z0-9]"  # a mention
    r"|(?<!\u200b)#[0-9]|(?<![\\])\]\(|(?<!\\)!\[|<[A-Za-z/!]|://|www\.",
)


def test_code_span_survives_backticks_and_newlines() -> None:
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("line\nbreak") == "`line break`"
    assert code("x" * 300).endswith("…`") and len(code("x" * 300)) == 202


def test_plain_neutralises_pings_links_images_html() -> None:
    text = plain("@octocat see #12, owner/repo#3 and [x](https://evil.example) ![i](http://t) <img src=x>")
    assert "@\u200boctocat" in text and "#\u200b12" in text and "#\u200b3" in text
    assert "<img" not in text and "&lt;img" in text
    assert "\\[x\\]\\(https:\u200b//evil.example\\)" in text
    assert "\\!\\[i\\]" in text


def test_inline_keeps_code_spans() -> None:
    out = inline("`.github/spider.yml` was ignored because `k`: value @bob")
    assert out.startswith("`.github/spider.yml` was ignored because `k`: value @\u200bbob")


@given(st.text(max_size=300))
def test_nothing_active_survives_plain(text: str) -> None:
    out = plain(text)
    assert not DANGEROUS.search(out)
    assert "\n" not in out


@given(st.text(max_size=200))
def test_code_is_one_span(text: str) -> None:
    out = code(text)
    fence = re.match(r"`+", out).group(0)  # type: ignore[union-attr]
    body = out[len(fence):-len(fence)]
    assert out.endswith(fence) and fence not in body and "\n" not in out
