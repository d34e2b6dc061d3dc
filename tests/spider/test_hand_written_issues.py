"""The three issues a new user wrote by hand, as comments (the issue "The function the
issue names stays on top"): a method the issue calls stays on top (a small web framework
written for this test, shaped like gin: several ``Engine.Run*`` close to "we run it"), an
anonymous export is named by its file and a function and its closures are one item
(axios as the npm registry ships it; a handler attached to an object inside a function,
``request.onabort = ...``, is a member, not a closure). The third, requests, is
``tests/spider/test_example_comment.py``. Without npm the axios test is skipped, or fails
when ``CI`` is set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from spider.comment import build_view, render
from spider.expand.tidy import nested_in
from spider.graph import CodeGraph
from spider.index import build_index
from spider.localize import locate
from spider.models import Issue, Localization
from spider.settings import EngineSettings
from spider.source import DirectorySource
from tests.spider.shop import write_files

SHA = "0" * 40
AXIOS = "axios@1.7.9"
NPM_TIMEOUT_S = 300
TOP = 3  # the named function must be among the first this many

ENGINE_GO = '''package kite

import (
	"net"
	"net/http"
)

// Engine is the framework's instance: routes, middleware and the trusted proxies.
type Engine struct {
	trustedProxies []string
	handler        http.Handler
}

// Run attaches the engine to a http.Server and starts listening and serving requests.
// It is a shortcut for http.ListenAndServe(addr, engine): run the server.
func (engine *Engine) Run(addr string) error {
	return http.ListenAndServe(addr, engine.handler)
}

// RunTLS runs the server and starts listening and serving HTTPS requests.
func (engine *Engine) RunTLS(addr, certFile, keyFile string) error {
	return http.ListenAndServeTLS(addr, certFile, keyFile, engine.handler)
}

// RunUnix runs the server on a unix socket and starts serving requests.
func (engine *Engine) RunUnix(file string) error {
	listener, err := net.Listen("unix", file)
	if err != nil {
		return err
	}
	return engine.RunListener(listener)
}

// RunFd runs the server on a file descriptor and starts serving requests.
func (engine *Engine) RunFd(fd int) error {
	listener, err := net.FileListener(nil)
	if err != nil {
		return err
	}
	return engine.RunListener(listener)
}

// RunListener runs the server on a listener and starts serving requests.
func (engine *Engine) RunListener(listener net.Listener) error {
	return http.Serve(listener, engine.handler)
}

// isTrustedProxy reports whether the address belongs to a trusted proxy.
func (engine *Engine) isTrustedProxy(ip string) bool {
	for _, p := range engine.trustedProxies {
		if p == ip {
			return true
		}
	}
	return false
}
'''

CONTEXT_GO = '''package kite

import (
	"net"
	"net/http"
	"strings"
)

// Context carries one request through the handlers.
type Context struct {
	Request *http.Request
	engine  *Engine
}

// ClientIP returns the address of the client: the first untrusted hop of the
// forwarding headers when the request came through a trusted proxy, else RemoteIP.
func (c *Context) ClientIP() string {
	remote := c.RemoteIP()
	if !c.engine.isTrustedProxy(remote) {
		return remote
	}
	hops := strings.Split(c.GetHeader("X-Real-Ip"), ",")
	return strings.TrimSpace(hops[0])
}

// RemoteIP returns the address of the connection's other end.
func (c *Context) RemoteIP() string {
	ip, _, err := net.SplitHostPort(strings.TrimSpace(c.Request.RemoteAddr))
	if err != nil {
		return ""
	}
	return ip
}

// GetHeader returns a request header's value.
func (c *Context) GetHeader(key string) string {
	return c.Request.Header.Get(key)
}
'''


def _comment(
    root: Path, cache: Path, title: str, body: str = ""
) -> tuple[Localization, str, CodeGraph]:
    settings = EngineSettings(cache_dir=cache)
    index = build_index(DirectorySource(root), settings)
    loc = locate(index, Issue(title, body), settings)
    loc = replace(loc, commit=SHA)  # a tree without git: pin the permalinks to a commit
    view = build_view(loc, html_url="https://github.com/o/r", branch="main",
                      skip_label="spider:skip", app_name="spider-bot")
    return loc, render(view), index.graph


def test_a_method_the_issue_calls_stays_on_top(tmp_path: Path) -> None:
    root = write_files(tmp_path / "kite", {"engine.go": ENGINE_GO, "context.go": CONTEXT_GO})
    loc, body, _ = _comment(root, tmp_path / "cache", "We run kite behind a proxy and "
                         "c.ClientIP() returns the proxy address instead of X-Forwarded-For")
    ids = [h.id for h in loc.hits]
    assert "context.go:Context.ClientIP" in ids[:TOP], ids
    first = re.findall(r"^\d+\. \[`([^`]+)`\]", body, re.MULTILINE)
    assert "Context.ClientIP" in first[:TOP]


@pytest.fixture(scope="module")
def axios_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """axios' sources as the npm registry ships them (lib/ only)."""
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI"):
            pytest.fail("npm is needed to fetch axios")
        pytest.skip("npm is needed to fetch axios")
    where = tmp_path_factory.mktemp("axios")
    done = subprocess.run([npm, "pack", AXIOS, "--silent"], cwd=where, capture_output=True,
                          text=True, timeout=NPM_TIMEOUT_S, check=False)
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"npm pack {AXIOS} failed: {done.stderr[-300:]}")
        pytest.skip(f"npm pack {AXIOS} failed: {done.stderr[-300:]}")
    with tarfile.open(next(where.glob("axios-*.tgz"))) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("package/lib/")]
        tar.extractall(where, members=members, filter="data")
    return where / "package"


def test_no_item_is_named_default_and_no_function_is_listed_with_its_closure(
    axios_tree: Path, tmp_path: Path
) -> None:
    loc, body, graph = _comment(
        axios_tree, tmp_path / "cache", "Requests through the http adapter ignore the proxy",
        "With axios in Node, setting `proxy` in the request config has no effect: requests "
        "go direct. resolveConfig and the http adapter seem to drop it.")
    assert "`default`" not in body and ":default" not in body and "default." not in body
    listed = [h.id for h in loc.hits]
    own = {h.id for h in loc.hits if any(r.kind in ("mention", "traceback") for r in h.reasons)}
    pairs = [(a, b) for a in listed for b in listed
             if nested_in(graph, b, a) and not {a, b} <= own]
    assert not pairs
    assert any("resolveConfig" in line for line in body.splitlines() if "resolveConfig.js" in line)
