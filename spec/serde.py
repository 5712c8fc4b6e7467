"""Generic conversion between frozen dataclasses and JSON-able dicts, with schema versions.

Files carry `{"schema": "corun.<kind>/<version>", ...}`; loading checks the kind and the
version, rejects unknown and missing keys with the field's path, and lets each type's
`__post_init__` validate values (its SpecError gets the path prefixed).
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import json
import lzma
import os
import tempfile
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from corun.spec.errors import SpecError

T = TypeVar("T")

SCHEMA_VERSION = 1


def to_jsonable(obj: Any) -> Any:
    """A dataclass tree as plain dicts, lists, strings and numbers."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, tuple | list):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(to_jsonable(k)): to_jsonable(v) for k, v in obj.items()}
    return obj


def from_jsonable(cls: type[T], data: Any, path: str = "") -> T:
    """Build `cls` from plain data; errors name the path of the bad field."""
    return _convert(cls, data, path or cls.__name__.lower())


def _convert(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _convert(non_none[0], data, path)
        for a in non_none:  # first alternative that accepts the value
            try:
                return _convert(a, data, path)
            except SpecError:
                continue
        raise SpecError(path, data, f"one of {non_none}")
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list | tuple):
            raise SpecError(path, data, "a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], x, f"{path}[{i}]") for i, x in enumerate(data))
        if len(args) != len(data):
            raise SpecError(path, data, f"a list of {len(args)} items")
        return tuple(_convert(a, x, f"{path}[{i}]") for i, (a, x) in enumerate(zip(args, data)))
    if origin is dict:
        kt, vt = typing.get_args(tp)
        if not isinstance(data, dict):
            raise SpecError(path, data, "a mapping")
        return {_convert(kt, k, f"{path}.{k}"): _convert(vt, v, f"{path}.{k}")
                for k, v in data.items()}
    if dataclasses.is_dataclass(tp):
        return _convert_dataclass(tp, data, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise SpecError(path, data, f"one of {allowed}") from None
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise SpecError(path, data, "a number")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise SpecError(path, data, "an integer")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise SpecError(path, data, "true or false")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise SpecError(path, data, "a string")
        return data
    if tp is Any:
        return data
    raise TypeError(f"unsupported type {tp!r} at {path}")


def _convert_dataclass(cls: Any, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise SpecError(path, data, f"a mapping of {cls.__name__} fields")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SpecError(f"{path}.{unknown[0]}", data[unknown[0]],
                        f"not a field of {cls.__name__}; fields: {', '.join(fields)}")
    kwargs = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], f"{path}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise SpecError(f"{path}.{name}", None, "required field is missing")
    try:
        return cls(**kwargs)
    except SpecError as e:
        raise e.within(path) from None


def schema_tag(cls: type) -> str:
    """The tag a file of `cls` carries: its own SCHEMA_VERSION where it has changed."""
    return f"corun.{cls.__name__.lower()}/{getattr(cls, 'SCHEMA_VERSION', SCHEMA_VERSION)}"


def dumps(obj: Any) -> dict[str, Any]:
    """The document for `obj`: its fields plus the schema tag."""
    return {"schema": schema_tag(type(obj)), **to_jsonable(obj)}


def loads(cls: type[T], doc: Any, source: str = "") -> T:
    """Check the schema tag of `doc`, then build `cls` from the rest."""
    where = source or cls.__name__.lower()
    if not isinstance(doc, dict):
        raise SpecError(where, type(doc).__name__, f"a mapping with schema {schema_tag(cls)}")
    tag = doc.get("schema")
    if tag != schema_tag(cls):
        older = isinstance(tag, str) and tag.split("/")[0] == schema_tag(cls).split("/")[0]
        raise SpecError(f"{where}.schema", tag, f"must be {schema_tag(cls)!r}" + (
            " (an older corun wrote this file: make it again with this one)" if older else ""))
    body = {k: v for k, v in doc.items() if k != "schema"}
    return from_jsonable(cls, body, cls.__name__.lower())


def cache_dir() -> Path:
    """Where corun keeps what it can remake (generated kernels, refitted models):
    $CORUN_CACHE_DIR, default ~/.cache/corun."""
    return Path(os.environ.get("CORUN_CACHE_DIR", Path.home() / ".cache" / "corun"))


def _umask() -> int:
    """The process's file-creation mask (reading it means setting it back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temp file and a rename: never half-written. The
    file gets the user's normal permissions (0666 less the umask), not the temp file's 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_or_print(text: str, path: str | Path | None) -> None:
    """A report's text written atomically to `path`, or printed where there is none."""
    if path is not None:
        write_atomic(path, text)
    else:
        print(text, end="")


GZIP_SUFFIX = ".gz"
XZ_SUFFIX = ".xz"
"""Large records may be stored compressed (gzip or xz); every reader takes them by their
plain name."""


def stored_name(path: str | Path) -> str:
    """A stored file's plain name, however it is compressed: `x.json` for `x.json`,
    `x.json.gz` and `x.json.xz` alike (reports name records by it)."""
    name = Path(path).name
    for suffix in (GZIP_SUFFIX, XZ_SUFFIX):
        name = name.removesuffix(suffix)
    return name


def stored_path(path: str | Path) -> Path:
    """`path`, or its compressed twin `path.gz` (or `path.xz`) where only that exists:
    large records are kept compressed, and every reader takes a record by either name. A
    compressed name that is not there is looked up by its plain name the same way, so
    that a record recompressed (gz to xz) keeps the names code and reports cite."""
    path = Path(path)
    if path.exists():
        return path
    plain = path.with_name(stored_name(path))
    if plain.exists():
        return plain
    for suffix in (GZIP_SUFFIX, XZ_SUFFIX):
        twin = plain.with_name(plain.name + suffix)
        if twin.exists():
            return twin
    return path


def read_stored_bytes(path: str | Path) -> bytes:
    """The bytes of `path` (see stored_path), decompressed where it is stored so."""
    p = stored_path(path)
    raw = p.read_bytes()
    if p.suffix == GZIP_SUFFIX:
        return gzip.decompress(raw)
    if p.suffix == XZ_SUFFIX:
        return lzma.decompress(raw)
    return raw


def read_stored_text(path: str | Path) -> str:
    """The text of `path` (see stored_path), decompressed where it is stored so."""
    return read_stored_bytes(path).decode()


def stored_glob(folder: Path, pattern: str) -> list[Path]:
    """The files of `folder` matching `pattern`, stored plain or compressed, each under
    its plain name, sorted."""
    plain = set(folder.glob(pattern))
    for suffix in (GZIP_SUFFIX, XZ_SUFFIX):
        plain |= {p.with_name(p.name[:-len(suffix)]) for p in folder.glob(pattern + suffix)}
    return sorted(plain)


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def save(obj: Any, path: str | Path) -> None:
    """Save a spec object as JSON or YAML (by suffix), atomically."""
    path = Path(path)
    doc = dumps(obj)
    text = yaml.safe_dump(doc, sort_keys=False) if _is_yaml(path) else json.dumps(doc, indent=1)
    write_atomic(path, text + ("" if text.endswith("\n") else "\n"))


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file; a parse failure names the file."""
    path = Path(path)
    try:
        text = read_stored_text(path)
    except OSError as e:
        raise SpecError("file", str(path), f"a readable file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise SpecError("file", str(path), f"UTF-8 text ({e.reason})") from None
    try:
        return yaml.load(text, _UniqueKeyLoader) if _is_yaml(path) else json.loads(
            text, object_pairs_hook=_unique_pairs)
    except (json.JSONDecodeError, yaml.YAMLError, RecursionError) as e:
        raise SpecError("file", str(path),
                        f"valid {'YAML' if _is_yaml(path) else 'JSON'}: {e}") from None
    except _DuplicateKey as e:
        raise SpecError(f"{path}: {e.key}", "given twice", "each key once") from None


class _DuplicateKey(ValueError):
    def __init__(self, key: object) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json keeps the last without a word)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping key given twice (it keeps the last)."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        for i, k in enumerate(keys):
            if k in keys[:i]:
                raise _DuplicateKey(k)
        return super().construct_mapping(node, deep=deep)


def load(cls: type[T], path: str | Path) -> T:
    """Load a spec object saved by `save`."""
    return loads(cls, read_document(path), str(path))
