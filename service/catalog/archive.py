"""Exercise folders from an uploaded archive (.zip or .tar.gz), read in memory, never extracted.

An archive is an author's, so it is read as hostile: every entry is a regular file or a folder
under a relative path without `..` (no absolute path, no link of either kind, no device), no name
twice, at most `max_files` files, at most `max_uncompressed` bytes once uncompressed (counted as
they are inflated, never trusting the sizes the archive declares), and no entry over 64 KiB that
inflates more than `max_ratio` times (a bomb). The first entry at fault refuses the whole archive,
naming it; nothing is written on disk, here or anywhere.

Layout: `<slug>/exercise.toml`, `<slug>/reference.py`, ... for each exercise; one top folder around
them all is allowed (as GitHub's "Download ZIP" makes). Entries of hidden folders and files, and
macOS's `__MACOSX/` and `__pycache__/`, are left out, as the catalog's reader leaves them out.
"""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from .loader import SPEC_FILE

ZIP_TYPES = frozenset({"application/zip", "application/x-zip-compressed"})
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/x-gtar"})
#: Bytes of either kind, told apart by their first bytes (what a generated client sends).
OCTET_STREAM = "application/octet-stream"
ARCHIVE_TYPES = ZIP_TYPES | GZIP_TYPES | {OCTET_STREAM}
RATIO_FREE_BYTES = 64 * 1024
_CHUNK = 64 * 1024
#: A tar's own bytes around its files: a 512-byte header per entry, files padded to 512 bytes, the end.
_TAR_OVERHEAD_PER_ENTRY = 1024


class ArchiveRefused(ValueError):
    """The archive, or one entry of it (`entry`), breaks a rule; nothing of it is used."""

    def __init__(self, message: str, entry: str | None = None) -> None:
        super().__init__(f"{entry}: {message}" if entry else message)
        self.entry = entry


@dataclass(frozen=True)
class ArchiveLimits:
    max_files: int
    max_uncompressed: int
    max_ratio: int


def _skipped(parts: list[str]) -> bool:
    return any(part.startswith(".") or part in ("__MACOSX", "__pycache__") for part in parts)


def _path_parts(name: str) -> list[str] | None:
    """The entry's path as its parts; None for a folder entry; ArchiveRefused for an unsafe path."""
    if "\\" in name or "\x00" in name:
        raise ArchiveRefused("a path with a backslash or a NUL character", name)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRefused("an absolute path", name)
    parts = name.split("/")
    if ".." in parts:
        raise ArchiveRefused("a path that leaves its folder ('..')", name)
    parts = [part for part in parts if part not in ("", ".")]
    return parts or None


class _Files:
    """The files read so far, with the limits checked at each one."""

    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self.files: dict[str, bytes] = {}
        self.total = 0

    def room(self) -> int:
        return self.limits.max_uncompressed - self.total

    def add(self, name: str, parts: list[str], data: bytes) -> None:
        path = "/".join(parts)
        if path in self.files:
            raise ArchiveRefused("a name that is in the archive twice", name)
        if len(self.files) >= self.limits.max_files:
            raise ArchiveRefused(f"more than {self.limits.max_files} files (UPLOAD_MAX_FILES)", name)
        self.total += len(data)
        self.files[path] = data

    def too_large(self, name: str) -> ArchiveRefused:
        return ArchiveRefused(f"the archive is larger than {self.limits.max_uncompressed} bytes once uncompressed "
                              "(UPLOAD_MAX_UNCOMPRESSED_BYTES)", name)


def _read_zip(body: bytes, limits: ArchiveLimits) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ArchiveRefused(f"not a readable zip archive ({exc})") from None
    read = _Files(limits)
    entries = archive.infolist()
    if len(entries) > 2 * limits.max_files:
        raise ArchiveRefused(f"more than {limits.max_files} files (UPLOAD_MAX_FILES)")
    for info in entries:
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            raise ArchiveRefused("a symbolic link", info.filename)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise ArchiveRefused("not a regular file or folder (a device, a pipe...)", info.filename)
        parts = _path_parts(info.filename)
        if parts is None or info.is_dir() or _skipped(parts):
            continue
        if info.flag_bits & 0x1:
            raise ArchiveRefused("an encrypted entry", info.filename)
        data = _inflate_zip_entry(archive, info, read)
        read.add(info.filename, parts, data)
    return read.files


def _inflate_zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, read: _Files) -> bytes:
    """The entry's bytes, inflated chunk by chunk up to the room left (the declared size is not trusted)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > read.room():
                    raise read.too_large(info.filename)
                if size > RATIO_FREE_BYTES and size > read.limits.max_ratio * max(info.compress_size, 1):
                    raise ArchiveRefused(f"inflates more than {read.limits.max_ratio} times its compressed size "
                                         "(UPLOAD_MAX_RATIO): a zip bomb?", info.filename)
                chunks.append(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ArchiveRefused(f"cannot be read ({exc})", info.filename) from None
    return b"".join(chunks)


def _gunzip(body: bytes, limit: int, max_ratio: int) -> bytes:
    """The tar inside a .tar.gz, inflated up to `limit` bytes."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out: list[bytes] = []
    size = 0
    try:
        data = inflater.decompress(body, _CHUNK)
        while True:
            size += len(data)
            if size > limit:
                raise ArchiveRefused(f"larger than {limit} bytes once uncompressed (UPLOAD_MAX_UNCOMPRESSED_BYTES)")
            if size > RATIO_FREE_BYTES and size > max_ratio * len(body):
                raise ArchiveRefused(f"inflates more than {max_ratio} times its size (UPLOAD_MAX_RATIO): a gzip bomb?")
            out.append(data)
            if inflater.eof or not inflater.unconsumed_tail:
                break
            data = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
    except zlib.error as exc:
        raise ArchiveRefused(f"not a readable gzip stream ({exc})") from None
    if not inflater.eof:
        raise ArchiveRefused("the gzip stream is cut short")
    return b"".join(out)


def _read_tar_gz(body: bytes, limits: ArchiveLimits) -> dict[str, bytes]:
    tar_bytes = _gunzip(body, limits.max_uncompressed + _TAR_OVERHEAD_PER_ENTRY * (2 * limits.max_files + 2),
                        limits.max_ratio)
    read = _Files(limits)
    try:
        archive = tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:")
        members = []
        for member in archive:
            members.append(member)
            if len(members) > 2 * limits.max_files:
                raise ArchiveRefused(f"more than {limits.max_files} files (UPLOAD_MAX_FILES)")
    except tarfile.TarError as exc:
        raise ArchiveRefused(f"not a readable tar archive ({exc})") from None
    for member in members:
        if member.issym() or member.islnk():
            raise ArchiveRefused("a link (symbolic or hard)", member.name)
        if not (member.isfile() or member.isdir()):
            raise ArchiveRefused("not a regular file or folder (a device, a pipe...)", member.name)
        parts = _path_parts(member.name)
        if parts is None or member.isdir() or _skipped(parts):
            continue
        if member.size > read.room():
            raise read.too_large(member.name)
        stream = archive.extractfile(member)
        assert stream is not None  # a regular file
        read.add(member.name, parts, stream.read())
    return read.files


def _folders(files: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """{slug: {path in its folder: bytes}}, one top folder around them all taken off."""
    if not files:
        raise ArchiveRefused("the archive holds no exercise folder")
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) == 1 and all("/" in path for path in files):
        top = tops.pop()
        if f"{top}/{SPEC_FILE}" not in files:  # a wrapper, not an exercise folder itself
            files = {path.split("/", 1)[1]: data for path, data in files.items()}
    folders: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        if "/" not in path:
            raise ArchiveRefused("a file outside any exercise folder (each exercise is a folder named by its slug)",
                                 path)
        slug, rel = path.split("/", 1)
        folders.setdefault(slug, {})[rel] = data
    return folders


def check_file_names(files: Mapping[str, str], max_files: int) -> None:
    """An exercise's files sent as JSON ({path: text}) follow the archives' rules for names: no
    absolute path, no `..`, no backslash, at most `max_files`; ArchiveRefused names the first at fault."""
    if len(files) > max_files:
        raise ArchiveRefused(f"more than {max_files} files (UPLOAD_MAX_FILES)")
    for name in files:
        if _path_parts(name) is None:
            raise ArchiveRefused("not a file name", name)


def exercise_folders(body: bytes, content_type: str, limits: ArchiveLimits) -> dict[str, dict[str, str]]:
    """The exercise folders of an archive (`content_type`: a zip or a gzip type): {slug: {path: text}},
    or ArchiveRefused for the first rule it breaks."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == OCTET_STREAM:
        media = "application/zip" if body.startswith(b"PK") else "application/gzip" if body.startswith(b"\x1f\x8b") else media
    if media in ZIP_TYPES:
        files = _read_zip(body, limits)
    elif media in GZIP_TYPES:
        files = _read_tar_gz(body, limits)
    else:
        raise ArchiveRefused(f"an archive is a .zip or a .tar.gz (application/zip, application/gzip), not {media!r}")
    folders: dict[str, dict[str, str]] = {}
    for slug, found in _folders(files).items():
        texts = {}
        for rel, data in found.items():
            try:
                texts[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ArchiveRefused("not UTF-8 text (an exercise's files are text)", f"{slug}/{rel}") from None
        folders[slug] = texts
    return folders
