"""The tuned encoder: a LoRA delta on top of the bundled MiniLM weights.

``spider train delta`` tunes the bi-encoder and ships what it learned as a
small delta file rather than a second copy of the model. The file is NumPy's ``.npz``:

- ``meta``: a 0-d string array holding JSON: ``schema`` (1), ``kind``
  (``encoder-delta``), ``base`` (the model it tunes), ``base_fingerprint``
  (:func:`weights_fingerprint` of the weights it was trained on), ``rank``, ``alpha``,
  ``targets`` (names of the base's ``model.safetensors`` tensors it changes, with or
  without a ``bert.`` / ``0.auto_model.`` prefix), ``command`` (what made it) and anything
  else (the data, the figures);
- for each target ``N``: ``N.lora_A`` (rank x in_features) and ``N.lora_B``
  (out_features x rank), float16 or float32.

A target's merged weight is ``W + (alpha / rank) * (B @ A)``, computed and stored in
float32. :func:`tuned_model_dir` writes the merged model once, as a sentence-transformers
directory beside the exported ONNX graphs, and every backend loads it from there; the
embedding cache keys carry the delta's :attr:`EncoderDelta.digest`, so vectors of the
bundled and the tuned weights never mix.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import EncoderDeltaError, ModelLoadError

log = logging.getLogger(__name__)

DELTA_KIND = "encoder-delta"
DELTA_SCHEMA = 1
DELTA_FILE = Path(__file__).resolve().parent.parent / "encoder_delta.npz"  # `bundled`
REGENERATE = "spider train delta --pairs DIR --work DIR --write-weights"  # when the file does not say what made it
NO_DELTA = ("", "none")
BUNDLED = "bundled"
WEIGHTS_FILE = "model.safetensors"
# Left out of the tuned directory: the merged weights replace the first, and the others
# would hold the untuned weights in another format.
NOT_COPIED = (WEIGHTS_FILE, "pytorch_model.bin")
PROVENANCE_FILE = "encoder_delta.json"  # beside the merged weights: what made them
NAME_PREFIXES = ("0.auto_model.", "auto_model.", "bert.")  # how other exports name tensors
FACTOR_A = ".lora_A"
FACTOR_B = ".lora_B"
FACTOR_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))
FINGERPRINT_CHARS = 16
DIGEST_CHARS = 12


@dataclass(frozen=True)
class EncoderDelta:
    """A read and checked delta file: its LoRA factors per target tensor.

    Two deltas are equal (and hash alike) when they come from the same path with the same
    bytes (``digest``: sha256 of the file, first 12 hex characters)."""

    path: Path
    meta: Mapping[str, Any] = field(compare=False, repr=False)
    factors: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(compare=False, repr=False)
    digest: str = ""

    @property
    def rank(self) -> int:
        """The LoRA rank r (rows of every A, columns of every B)."""
        return int(self.meta["rank"])

    @property
    def alpha(self) -> float:
        """The LoRA scale numerator: updates are ``alpha / rank * B @ A``."""
        return float(self.meta["alpha"])

    @property
    def base_fingerprint(self) -> str:
        """:func:`weights_fingerprint` of the weights the delta was trained on."""
        return str(self.meta["base_fingerprint"])

    @property
    def command(self) -> str:
        """The command that regenerates the file (what made it, when it says so)."""
        return _command(self.meta)

    def update(self, target: str) -> np.ndarray:
        """``alpha / rank * B @ A`` of one target, float32."""
        a, b = self.factors[target]
        scale = np.float32(self.alpha / self.rank)
        product: np.ndarray = b @ a
        return (scale * product).astype(np.float32)

    def resolve(self, shapes: Mapping[str, tuple[int, ...]], where: object) -> dict[str, str]:
        """Each target's tensor name among ``shapes`` (the base's tensors: name -> shape),
        its prefix (``bert.``, ``0.auto_model.``) added or dropped where the base's names
        differ; refuses a name the base lacks and factors whose shape does not fit."""
        names: dict[str, str] = {}
        for target, (a, b) in self.factors.items():
            key = base_name(target, shapes)
            if key is None:
                raise self.error(f"targets {target!r}, which {where} does not hold")
            shape = tuple(shapes[key])
            if shape != (b.shape[0], a.shape[1]):
                raise self.error(
                    f"{target}: B @ A is {b.shape[0]}x{a.shape[1]} but {where} holds "
                    f"{'x'.join(map(str, shape))}"
                )
            names[target] = key
        return names

    def merge(
        self, weights: Mapping[str, np.ndarray], where: object = "the base"
    ) -> dict[str, np.ndarray]:
        """``weights`` with every target replaced by ``W + alpha / rank * B @ A`` (float32);
        the other tensors are the same objects."""
        names = self.resolve({k: v.shape for k, v in weights.items()}, where)
        merged = dict(weights)
        for target, key in names.items():
            merged[key] = (weights[key].astype(np.float32) + self.update(target)).astype(np.float32)
        return merged

    def error(self, problem: str) -> EncoderDeltaError:
        """An error naming this file, ``problem`` and the command that regenerates it."""
        return _error(self.path, problem, self.command)


def _command(meta: Mapping[str, Any], regenerate: str = REGENERATE) -> str:
    command = meta.get("command")
    return command.strip() if isinstance(command, str) and command.strip() else regenerate


def _error(path: Path, problem: str, command: str = REGENERATE) -> EncoderDeltaError:
    return EncoderDeltaError(f"encoder delta {path}: {problem}; regenerate it with `{command}`")


def base_name(target: str, names: Iterable[str]) -> str | None:
    """The name ``target`` has among ``names`` (a model's tensors): itself, or itself with
    a ``bert.`` / ``0.auto_model.`` prefix dropped or added; None when none is there."""
    known = set(names)
    if target in known:
        return target
    bare = target
    for prefix in NAME_PREFIXES:
        if bare.startswith(prefix):
            bare = bare[len(prefix) :]
            break
    for candidate in (bare, *(p + bare for p in NAME_PREFIXES)):
        if candidate in known:
            return candidate
    return None


def dump_lora(
    path: str | Path,
    header: Mapping[str, Any],
    factors: Mapping[str, tuple[np.ndarray, np.ndarray]],
    arrays: Mapping[str, np.ndarray],
) -> None:
    """Write a LoRA file that :func:`read_delta` reads back: ``header`` (with ``targets``,
    the factors' names, added) as the ``meta`` JSON, the factors as float16 and the other
    ``arrays`` as they are."""
    path = Path(path)
    meta = {**header, "targets": sorted(factors)}
    out: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta, sort_keys=True)), **arrays}
    for name, (a, b) in factors.items():
        out[name + FACTOR_A] = a.astype(np.float16)
        out[name + FACTOR_B] = b.astype(np.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **out)  # type: ignore[arg-type]
    tmp.replace(path)


def read_delta(
    path: str | Path,
    base_dir: str | Path | None = None,
    *,
    kind: str = DELTA_KIND,
    regenerate: str = REGENERATE,
) -> EncoderDelta:
    """Read and check a delta file: schema, kind, rank, alpha, targets, each target's two
    factors (shapes, dtype, finite values). With ``base_dir`` (a model directory), also
    that every target is one of its tensors and ``B @ A`` has that tensor's shape (its
    header only is read; :func:`check_base` also compares the fingerprint). ``kind`` is
    what the file must say it holds (another model made of the same factors, such as the
    cross-encoder, names its own) and ``regenerate`` the command that makes one when the
    file does not say.

    Long because each check of the file names what is wrong in its own error message, in the
    order the file is read."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc})") from exc
    digest = hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS]
    arrays = _arrays(path, raw)
    meta = _meta(path, arrays.get("meta"))
    command = _command(meta, regenerate)

    def fail(problem: str) -> EncoderDeltaError:
        return _error(path, problem, command)

    schema = meta.get("schema")
    if schema != DELTA_SCHEMA or isinstance(schema, bool):
        raise fail(f"schema {schema!r}, this engine reads schema {DELTA_SCHEMA}")
    if meta.get("kind") != kind:
        raise fail(f"holds {meta.get('kind')!r}, not {kind!r}")
    rank, alpha = meta.get("rank"), meta.get("alpha")
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
        raise fail(f"rank {rank!r} is not a positive integer")
    if (
        not isinstance(alpha, int | float)
        or isinstance(alpha, bool)
        or not np.isfinite(alpha)
        or alpha <= 0
    ):
        raise fail(f"alpha {alpha!r} is not a positive number")
    fingerprint = meta.get("base_fingerprint")
    if not isinstance(fingerprint, str) or not _is_hex(fingerprint):
        raise fail(f"base_fingerprint {fingerprint!r} is not a hex string")
    targets = meta.get("targets")
    if (
        not isinstance(targets, list)
        or not targets
        or not all(isinstance(t, str) and t for t in targets)
    ):
        raise fail("'targets' must be a non-empty list of tensor names")
    if len(set(targets)) != len(targets):
        raise fail("'targets' names a tensor twice")
    factors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for target in targets:
        a = arrays.get(target + FACTOR_A)
        b = arrays.get(target + FACTOR_B)
        if a is None or b is None:
            raise fail(f"no {target}{FACTOR_A if a is None else FACTOR_B} array")
        for name, m in ((FACTOR_A, a), (FACTOR_B, b)):
            if m.dtype not in FACTOR_DTYPES or m.ndim != 2:
                raise fail(f"{target}{name} is {m.ndim}-d {m.dtype}, not a float16/float32 matrix")
            if not np.isfinite(m).all():
                raise fail(f"{target}{name} holds non-finite numbers")
        if a.shape[0] != rank or b.shape[1] != rank:
            raise fail(
                f"{target}: A is {a.shape[0]}x{a.shape[1]} and B {b.shape[0]}x{b.shape[1]}, "
                f"but the rank is {rank} (A: rank x in, B: out x rank)"
            )
        factors[target] = (a.astype(np.float32), b.astype(np.float32))
    stray = sorted(
        k for k in arrays if k.endswith((FACTOR_A, FACTOR_B)) and k.rsplit(".", 1)[0] not in factors
    )
    if stray:
        raise fail(f"factors {stray[:3]} belong to no listed target")
    delta = EncoderDelta(path=path, meta=meta, factors=factors, digest=digest)
    if base_dir is not None:
        delta.resolve(_shapes(Path(base_dir)), Path(base_dir) / WEIGHTS_FILE)
    return delta


def _arrays(path: Path, raw: bytes) -> dict[str, np.ndarray]:
    try:
        loaded = np.load(io.BytesIO(raw), allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise _error(path, "not an .npz archive (numpy.savez)")
        with loaded:
            return {k: loaded[k] for k in loaded.files}
    except EncoderDeltaError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _error(path, f"not a readable .npz archive ({exc})") from exc


def _meta(path: Path, value: np.ndarray | None) -> dict[str, Any]:
    if value is None or value.ndim != 0 or value.dtype.kind not in "US":
        raise _error(path, "no 'meta' (a 0-d string array holding JSON)")
    text = value[()]
    try:
        meta = json.loads(text.decode() if isinstance(text, bytes) else str(text))
    except (ValueError, UnicodeDecodeError) as exc:
        raise _error(path, f"unreadable 'meta' ({exc})") from exc
    if not isinstance(meta, dict):
        raise _error(path, "'meta' is not a JSON object")
    return meta


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text.lower())


def _weights_file(model_dir: str | Path) -> Path:
    path = Path(model_dir) / WEIGHTS_FILE
    if not path.is_file():
        raise ModelLoadError(f"{model_dir}: no {WEIGHTS_FILE}, which an encoder delta tunes")
    return path


def weights_fingerprint(model_dir: str | Path) -> str:
    """First 16 hex characters of the sha256 of ``model_dir``'s ``model.safetensors``
    (hashed once per process and file version: path, size, modification time)."""
    path = _weights_file(model_dir)
    st = path.stat()
    return _fingerprint(str(path.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _fingerprint(path: str, _size: int, _mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:FINGERPRINT_CHARS]


def _shapes(model_dir: Path) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor of ``model_dir``'s weights (the header only)."""
    path = _weights_file(model_dir)
    st = path.stat()
    return dict(_header(str(path.resolve()), st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=8)
def _header(path: str, _size: int, _mtime_ns: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    from safetensors import safe_open

    try:
        with safe_open(path, framework="numpy") as f:
            return tuple((k, tuple(f.get_slice(k).get_shape())) for k in f.keys())  # noqa: SIM118
    except Exception as exc:  # safetensors raises its own error type for a corrupt file
        raise ModelLoadError(f"cannot read the tensors of {path}: {exc}") from exc


def check_base(delta: EncoderDelta, model_dir: str | Path) -> None:
    """Refuse ``delta`` unless ``model_dir``'s weights are the ones it was trained on (same
    fingerprint) and hold each of its targets in the shape its factors make."""
    actual = weights_fingerprint(model_dir)
    if actual != delta.base_fingerprint:
        raise delta.error(
            f"it was trained on base weights with fingerprint {delta.base_fingerprint}, but "
            f"{Path(model_dir) / WEIGHTS_FILE} has fingerprint {actual} (another version of "
            f"{delta.meta.get('base', 'the base model')})"
        )
    delta.resolve(_shapes(Path(model_dir)), Path(model_dir) / WEIGHTS_FILE)


def tuned_model_dir(delta: EncoderDelta, base_dir: str | Path, export_dir: str | Path) -> Path:
    """The sentence-transformers directory of ``base_dir`` with ``delta`` merged in:
    ``export_dir/models/<base_dir.name>-delta-<digest>/`` (every file and folder of the
    base but its weights, and the merged ``model.safetensors``). Written once, into a
    temporary folder renamed into place (concurrent processes: the first rename wins, the
    others use it); reused when present; checked against the base (:func:`check_base`)
    once per process."""
    base = Path(base_dir).expanduser().resolve()
    export = Path(export_dir).expanduser().resolve()
    return _tuned_model_dir(delta, base, export)


@lru_cache(maxsize=4)
def _tuned_model_dir(delta: EncoderDelta, base_dir: Path, export_dir: Path) -> Path:
    check_base(delta, base_dir)
    target = export_dir / "models" / f"{base_dir.name}-delta-{delta.digest}"
    if (target / WEIGHTS_FILE).is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        raise ModelLoadError(f"cannot write the tuned encoder under {export_dir}: {exc}") from exc
    try:
        _write_tuned(delta, base_dir, tmp)
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide it from the cache's other users
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / WEIGHTS_FILE).is_file():
                raise
            # another process renamed its copy first: the same bytes, use that one
    except OSError as exc:
        raise ModelLoadError(f"cannot write the tuned encoder {target}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("merged encoder delta %s into %s", delta.path, target)
    return target


def _write_tuned(delta: EncoderDelta, base_dir: Path, out: Path) -> None:
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    for item in base_dir.iterdir():
        if item.name in NOT_COPIED:
            continue
        if item.is_dir():
            shutil.copytree(item, out / item.name)
        else:
            shutil.copy2(item, out / item.name)
    weights_path = base_dir / WEIGHTS_FILE
    with safe_open(str(weights_path), framework="numpy") as f:
        metadata = f.metadata() or {}
    metadata.setdefault("format", "pt")  # transformers reads only archives that say so
    merged = delta.merge(load_file(str(weights_path)), weights_path)
    save_file(merged, str(out / WEIGHTS_FILE), metadata=metadata)
    provenance = {
        "delta": str(delta.path),
        "digest": delta.digest,
        "base": str(base_dir),
        "base_fingerprint": delta.base_fingerprint,
        "meta": dict(delta.meta),
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, default=str) + "\n")


def file_setting(
    spec: str, *, shipped: Path, variable: str, what: str, regenerate: str
) -> Path | None:
    """Where a setting naming a model file points: None for none (empty or ``none``),
    ``shipped`` for ``bundled``, else the path given; refuses a file that is not there
    (``variable`` and ``what`` name the setting and the model in the message)."""
    spec = spec.strip()
    if spec.lower() in NO_DELTA:
        return None
    if spec.lower() == BUNDLED:
        if not shipped.is_file():
            raise EncoderDeltaError(
                f"{variable}=bundled: this install ships no {what} (no file {shipped}); make "
                f"one with `{regenerate}` or unset {variable}"
            )
        return shipped
    path = Path(spec).expanduser()
    if not path.is_file():
        raise EncoderDeltaError(
            f"{what} {spec!r}: no file at {path}; make one with `{regenerate}` or unset {variable}"
        )
    return path


def delta_path(spec: str) -> Path | None:
    """Where the setting ``encoder_delta`` points (:func:`file_setting`)."""
    return file_setting(
        spec,
        shipped=DELTA_FILE,
        variable="SPIDER_ENCODER_DELTA",
        what="tuned encoder",
        regenerate=REGENERATE,
    )


def load_delta(spec: str, base_dir: str | Path | None = None) -> EncoderDelta | None:
    """The delta the setting ``encoder_delta`` names (None: none), read and checked once
    per process and file version (see :func:`read_delta` for ``base_dir``)."""
    path = delta_path(spec)
    if path is None:
        return None
    st = path.stat()
    base = str(Path(base_dir).resolve()) if base_dir is not None else None
    return _read_cached(str(path.resolve()), st.st_size, st.st_mtime_ns, base)


@lru_cache(maxsize=8)
def _read_cached(path: str, _size: int, _mtime_ns: int, base_dir: str | None) -> EncoderDelta:
    return read_delta(path, base_dir)


__all__ = [
    "BUNDLED",
    "DELTA_FILE",
    "DELTA_KIND",
    "DELTA_SCHEMA",
    "NO_DELTA",
    "REGENERATE",
    "EncoderDelta",
    "base_name",
    "check_base",
    "delta_path",
    "file_setting",
    "load_delta",
    "read_delta",
    "tuned_model_dir",
    "weights_fingerprint",
]
