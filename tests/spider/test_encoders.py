"""Encoder backends (torch, torch bf16, ONNX fp32, ONNX int8), the vector matrix, the cold
path, the torch-free warm path and the shared (PostgreSQL) embedding cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from spider.index import build_index
from spider.localize import locate
from spider.models import Issue, PartialIndex
from spider.retrieve.cache import EmbeddingCache, SqlEmbeddingCache, open_cache
from spider.retrieve.dense import (
    BACKENDS,
    Encoder,
    bundled_model_path,
    encoder_model_id,
    preload_query_encoder,
    settings_model_id,
)
from spider.retrieve.onnx_encoder import export_onnx, load_onnx_model
from spider.settings import EngineSettings
from spider.source import GitSource
from tests.spider.bench.helpers import commit_files, init_repo
from tests.worker.pg import pg_url, shared_pg_admin  # noqa: F401

TEXTS = [
    "requests/models.py\nResponse.iter_content\ndef iter_content(self, chunk_size=1):\n"
    "    return self.raw.read(chunk_size)",
    "flask/app.py\nFlask.route\ndef route(self, rule, **options):\n    return decorator",
    "a short one",
    "x = 1\n" * 300,  # longer than max_seq_length: truncated the same way by both tokenizers
]

CODE = {
    "pkg/__init__.py": "",
    "pkg/net.py": textwrap.dedent(
        '''
        class Session:
            def send(self, request):
                """Send a prepared request over the network."""
                return self.adapter.send(request, timeout=self.timeout)

            def close(self):
                self.adapter.close()


        def retry(fn, times=3):
            for _ in range(times):
                try:
                    return fn()
                except OSError:
                    pass
        '''
    ),
    "pkg/text.py": textwrap.dedent(
        """
        def decode(data, encoding="utf-8"):
            return data.decode(encoding)


        def encode(text, encoding="utf-8"):
            return text.encode(encoding)


        def split_words(text):
            return text.split()


        def join_words(words):
            return " ".join(words)
        """
    ),
}
ISSUE = Issue(title="Session.send ignores the timeout", body="send() hangs on a dead network")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the bundled model's ONNX graphs (exported once)."""
    root = tmp_path_factory.mktemp("onnx")
    export_onnx(Path(bundled_model_path()), root)
    return root


def _cache_dir(exported: Path, path: Path) -> Path:
    """A fresh cache directory that shares the exported graphs (a link, no re-export)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "models").symlink_to(exported / "models", target_is_directory=True)
    return path


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, str]:
    r = init_repo(tmp_path / "repo")
    return r, commit_files(r, CODE, "base")


def test_onnx_fp32_matches_sentence_transformers_and_int8_is_close(exported: Path) -> None:
    torch_vecs = Encoder("", 128, None).encode(TEXTS)
    fp32 = Encoder("", 128, None, backend="onnx", export_dir=exported).encode(TEXTS)
    int8 = Encoder("", 128, None, backend="onnx-int8", export_dir=exported).encode(TEXTS)
    assert fp32.shape == torch_vecs.shape == int8.shape == (len(TEXTS), 384)
    assert np.abs(fp32 - torch_vecs).max() < 1e-5
    cos = (int8 * torch_vecs).sum(axis=1)
    assert cos.min() > 0.99, cos
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    bf16 = Encoder("", 128, None, backend="torch-bf16").encode(TEXTS)
    assert bf16.dtype == np.float32 and bf16.shape == torch_vecs.shape
    cos = (bf16 * torch_vecs).sum(axis=1)
    assert cos.min() > 0.999 and not np.array_equal(bf16, torch_vecs), cos


def test_a_bf16_encoder_embeds_its_queries_in_fp32(exported: Path) -> None:
    query = "Session.send ignores the timeout"
    bf16 = Encoder("", 128, None, backend="torch-bf16", export_dir=exported)
    fp32 = Encoder("", 128, None, backend="onnx", export_dir=exported)
    assert np.array_equal(bf16.encode_query(query), fp32.encode_query(query))


@pytest.mark.parametrize("backend", ["onnx", "torch-bf16"])
def test_the_query_model_loads_in_the_background_once(
    exported: Path, tmp_path: Path, backend: str
) -> None:
    cache = _cache_dir(exported, tmp_path / "c")
    settings = EngineSettings(cache_dir=cache, onnx_dir=cache, encoder=backend, max_seq_length=96)
    thread = preload_query_encoder(settings)
    assert thread is not None
    thread.join()
    first = load_onnx_model(bundled_model_path(), str(cache), 96, "onnx")
    # the session the thread made is the one the query uses: none is made twice
    assert load_onnx_model(bundled_model_path(), str(cache), 96, "onnx") is first
    query = Encoder.from_settings(settings, None).encode_query("Session.send hangs")
    plain = Encoder("", 96, None, backend="onnx", export_dir=exported).encode_query(
        "Session.send hangs"
    )
    assert np.array_equal(query, plain)


def test_nothing_is_preloaded_where_no_query_is_embedded_or_nothing_is_exported(
    exported: Path, tmp_path: Path
) -> None:
    cache = _cache_dir(exported, tmp_path / "c")
    assert preload_query_encoder(EngineSettings(onnx_dir=cache, first_stage="bm25")) is None
    assert preload_query_encoder(EngineSettings(onnx_dir=cache, encoder="torch")) is None
    empty = tmp_path / "empty"  # never exported: the first real use exports, not a thread
    assert preload_query_encoder(EngineSettings(onnx_dir=empty, encoder="onnx")) is None
    assert not (empty / "models").exists()


@pytest.mark.parametrize(("backend", "imported"), [("torch-bf16", True), ("onnx", False)])
def test_the_document_encoder_imports_ahead_only_on_torch(backend: str, imported: bool) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys, threading
        from spider import EngineSettings, import_document_encoder
        did = import_document_encoder(EngineSettings(encoder={backend!r}))
        print(json.dumps([did, "sentence_transformers" in sys.modules,
                          threading.active_count()]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    # nothing loaded or started: a process may fork after it
    assert json.loads(done.stdout) == [imported, imported, 1]


def test_the_cache_never_mixes_backends(exported: Path, tmp_path: Path) -> None:
    ids = {encoder_model_id("", 128, b) for b in BACKENDS}
    assert len(ids) == len(BACKENDS) == 4
    assert encoder_model_id("", 128, "torch") == "sentence-transformers/all-MiniLM-L6-v2@128"
    cache = EmbeddingCache(tmp_path)
    first = Encoder("", 128, cache, backend="onnx", export_dir=exported)
    first.encode(TEXTS[:2])
    assert first.embedded == 2
    other = Encoder("", 128, cache, backend="onnx-int8", export_dir=exported)
    other.encode(TEXTS[:2])
    assert other.embedded == 2 and other.cached == 0  # int8 never reads fp32 vectors
    again = Encoder("", 128, cache, backend="onnx-int8", export_dir=exported)
    again.encode(TEXTS[:2])
    assert again.embedded == 0 and again.cached == 2
    assert len(cache) == 4


def test_a_warm_index_reads_its_vector_matrix(
    exported: Path, tmp_path: Path, repo: tuple[Path, str]
) -> None:
    path, sha = repo
    settings = EngineSettings(cache_dir=_cache_dir(exported, tmp_path / "c"), encoder="onnx-int8")
    cold = build_index(GitSource(path, sha), settings)
    assert cold.stats["embedded"] == len(cold.function_ids) > 0
    (settings.cache_dir / "embeddings" / "embeddings.sqlite").unlink()  # the matrix suffices
    warm = build_index(GitSource(path, sha), settings)
    assert warm.stats["vectors_from"] == "matrix" and warm.stats["embedded"] == 0
    assert np.array_equal(warm.vectors(), cold.vectors())
    other = settings.model_copy(update={"encoder": "onnx"})  # another backend: its own matrix
    assert build_index(GitSource(path, sha), other).stats["embedded"] == len(cold.function_ids)


def test_the_cold_path_embeds_only_its_pool_and_says_so(
    exported: Path, tmp_path: Path, repo: tuple[Path, str]
) -> None:
    path, sha = repo
    pool = 3
    settings = EngineSettings(
        cache_dir=_cache_dir(exported, tmp_path / "c"), encoder="onnx-int8", cold_pool=pool, k=5
    )
    index = build_index(GitSource(path, sha), settings)
    assert index.stats["partial_index"] is True and "embedded" not in index.stats
    loc = locate(index, ISSUE, settings)
    assert len(loc.hits) == min(settings.k, len(index.function_ids))
    assert loc.settings.partial == PartialIndex(embedded_functions=pool,
                                                functions=len(index.function_ids))
    assert loc.settings.to_dict()["partial_index"] is True
    assert index.encoder().embedded == pool  # the query is not counted: it is not cached
    assert any(h.id.endswith("Session.send") for h in loc.hits[:2])
    # once every vector exists, the same settings rank from the full index
    full = build_index(GitSource(path, sha), settings.model_copy(update={"cold_pool": 0}))
    again = build_index(GitSource(path, sha), settings)
    assert again.stats["partial_index"] is False
    assert locate(again, ISSUE, settings).settings.partial is None
    assert full.stats["embedded"] == len(full.function_ids) - pool


@pytest.mark.parametrize("backend", ["onnx-int8", "torch-bf16"])
def test_the_warm_path_imports_no_torch(
    exported: Path, tmp_path: Path, repo: tuple[Path, str], backend: str
) -> None:
    path, sha = repo
    cache = _cache_dir(exported, tmp_path / "c")
    settings = EngineSettings(cache_dir=cache, encoder=backend)
    build_index(GitSource(path, sha), settings)  # warms graph and vectors
    script = textwrap.dedent(
        f"""
        import json, sys
        from spider.cli import app
        try:
            app(["locate", {str(path)!r}, "--issue", "Session.send ignores the timeout",
                 "--json"], standalone_mode=False)
        finally:
            print(json.dumps({{"torch": "torch" in sys.modules,
                   "st": "sentence_transformers" in sys.modules}}), file=sys.stderr)
        """
    )
    env = {**os.environ, "SPIDER_CACHE_DIR": str(cache), "SPIDER_ENCODER": backend}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"torch": False, "st": False}
    assert json.loads(done.stdout)["hits"]


def test_sql_cache_on_sqlite_is_an_embedding_cache(tmp_path: Path) -> None:
    cache = open_cache(tmp_path, f"sqlite:///{tmp_path / 'shared.db'}")
    assert isinstance(cache, SqlEmbeddingCache)
    v = np.arange(4, dtype=np.float32)
    cache.put_many({"k1": v})
    cache.put_many({"k1": v + 1, "k2": v})  # k1 is kept as first written
    got = cache.get_many(["k1", "k2", "missing"])
    assert sorted(got) == ["k1", "k2"] and got["k1"].tolist() == v.tolist()
    assert len(cache) == 2
    cache.close()


WORKER = textwrap.dedent(
    """
    import json, sys
    from spider.index import build_index
    from spider.settings import EngineSettings
    from spider.source import GitSource
    settings = EngineSettings(cache_dir=sys.argv[3], encoder="onnx-int8",
                              embedding_cache_url=sys.argv[4])
    index = build_index(GitSource(sys.argv[1], sys.argv[2]), settings)
    enc = index.encoder()
    print(json.dumps({"embedded": enc.embedded, "cached": enc.cached,
                      "functions": len(index.function_ids)}))
    """
)


def _worker(path: Path, sha: str, cache: Path, url: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(path), sha, str(cache), url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_two_workers_share_one_postgresql_cache(
    exported: Path,
    tmp_path: Path,
    repo: tuple[Path, str],
    pg_url: str,  # noqa: F811
) -> None:
    path, sha = repo
    first = _worker(path, sha, _cache_dir(exported, tmp_path / "w1"), pg_url)
    assert first["embedded"] == first["functions"] > 0
    second = _worker(path, sha, _cache_dir(exported, tmp_path / "w2"), pg_url)
    assert second == {"embedded": 0, "cached": first["functions"], "functions": first["functions"]}
    shared = SqlEmbeddingCache(pg_url)
    try:
        assert len(shared) == first["functions"]
        shared.put_many(dict.fromkeys(["race"], np.ones(3, dtype=np.float32)))
        shared.put_many(dict.fromkeys(["race"], np.zeros(3, dtype=np.float32)))  # no error
        assert shared.get_many(["race"])["race"].tolist() == [1.0, 1.0, 1.0]
    finally:
        shared.close()


def test_the_exported_graph_traces_eager_attention(exported: Path) -> None:
    import onnx

    from spider.retrieve.onnx_encoder import onnx_paths

    graph = onnx.load(str(onnx_paths(Path(bundled_model_path()), exported)[0]))
    ops = {n.op_type for n in graph.graph.node}
    assert "Softmax" in ops and "MatMul" in ops
    assert "IsNaN" not in ops  # SDPA's guard: an elementwise pass over every attention matrix


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_documents_are_cut_at_their_own_cap_and_queries_at_theirs(
    exported: Path, tmp_path: Path, backend: str
) -> None:
    long_text = TEXTS[0] + "\n" + "    value = compute(value, other)\n" * 40  # over 128 tokens
    cache = EmbeddingCache(tmp_path)
    full = Encoder("", 128, cache, backend=backend, export_dir=exported)
    short = Encoder("", 128, cache, backend=backend, export_dir=exported, document_seq_length=32)
    assert short.model_id == encoder_model_id("", 32, backend) != full.model_id
    head = Encoder("", 32, None, backend=backend, export_dir=exported)
    # a document at a 32-token cap is the text cut at 32 tokens, cached apart from the 128 one
    assert np.allclose(short.encode([long_text]), head.encode([long_text]), atol=1e-5)
    assert not np.allclose(short.encode([long_text]), full.encode([long_text]), atol=1e-3)
    assert short.cached == 1 and full.embedded == 1 and len(cache) == 2
    # while a query keeps the 128-token cap
    assert np.allclose(short.encode_query(long_text), full.encode_query(long_text), atol=1e-6)
    assert not np.allclose(short.encode_query(long_text), head.encode_query(long_text), atol=1e-3)


def test_the_document_cap_is_a_setting_the_index_keys_its_vectors_by(tmp_path: Path) -> None:
    settings = EngineSettings(cache_dir=tmp_path, encoder="onnx", document_seq_length=64)
    assert Encoder.from_settings(settings, None).document_seq_length == 64
    assert Encoder.from_settings(settings, None).max_seq_length == 128
    assert settings_model_id(settings) == encoder_model_id("", 64, "onnx")
