"""What the request schemas share, written once for the server and the OpenAPI document alike.

- No string in a request may contain U+0000 (NUL): PostgreSQL's text and jsonb cannot hold it, so
  one that reached a query or an insert was a 500. Every query and body schema derives from
  RequestSchema, which refuses a NUL anywhere in what it loads (nested values and keys included) as
  a 422 naming the field; `document_requests` puts the same rule in the document, as a pattern on
  each free string those schemas take.
- URLs the service will call (webhooks, an LMS's endpoints): `http_url`, an absolute http(s) URL
  in RFC 3986 syntax, checked by the pattern the document shows (`format: uri` beside it).
- Times in query filters: `QueryDateTime`, an RFC 3339 date-time whose seconds and offset may be
  left out (then UTC), checked by the patterns the document shows.
- Query schemas that read a blank value as not given (BLANK_IS_MISSING) say so: each parameter
  also takes "".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast, overload

from marshmallow import Schema, ValidationError, fields, pre_load, validate

NUL = "\x00"
NO_NUL_PATTERN = r"^[^\x00]*$"
NO_NUL_MESSAGE = "must not contain U+0000 (NUL)"


def nul_errors(value: Any) -> Any:
    """marshmallow-style messages for each NUL in `value` (a string, or lists and objects of them),
    or None without one."""
    if isinstance(value, str):
        return [NO_NUL_MESSAGE] if NUL in value else None
    if isinstance(value, Mapping):
        found = {}
        for key, item in value.items():
            errors = [NO_NUL_MESSAGE] if isinstance(key, str) and NUL in key else nul_errors(item)
            if errors:
                found[key] = errors
        return found or None
    if isinstance(value, (list, tuple)):
        found = {i: errors for i, item in enumerate(value) if (errors := nul_errors(item))}
        return found or None
    return None


class RequestSchema(Schema):
    """A request's query parameters or JSON body: no string in it may contain U+0000."""

    # A query schema that reads a blank value (an empty form field) as not given: its document
    # lets each parameter be "" too.
    BLANK_IS_MISSING = False

    @pre_load
    def _refuse_nul(self, data: Any, **_kwargs: Any) -> Any:
        if isinstance(data, Mapping):
            errors = nul_errors({key: data[key] for key in data})
            if errors:
                raise ValidationError(errors)
        return data


class JsonBoolean(fields.Boolean):
    """A JSON body's boolean: true or false. (marshmallow's Boolean also takes 1, 0, "yes", "on"...,
    which the document's `type: boolean` does not.)"""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


# --- URLs ------------------------------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP_LABEL = r"[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]"  # 2 or more characters after a dot
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = f"{_H16}:{_H16}"
_IPV6 = "|".join((  # RFC 3986's IPv6address, without the dotted IPv4 tail
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
))
_HOST = f"(?:(?:{_LABEL}\\.)+{_TOP_LABEL}\\.?|{_LABEL}\\.?|[0-9]{{1,3}}(?:\\.[0-9]{{1,3}}){{3}}|\\[(?:{_IPV6})\\])"
_PCT = "%[0-9A-Fa-f]{2}"
_USERINFO = f"(?:[A-Za-z0-9._~!$&'()*+,;=:-]|{_PCT})*@"
_PATH_CHAR = f"(?:[A-Za-z0-9._~!$&'()*+,;=:@/-]|{_PCT})"  # pchar and "/"
_QUERY_CHAR = f"(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|{_PCT})"  # pchar, "/" and "?"
_QUERY = f"\\?{_QUERY_CHAR}*"
_FRAGMENT = f"#{_QUERY_CHAR}*"
# What follows the authority: a path from "/", a query, a fragment; never "?" or "#" alone
# (marshmallow's URL check, kept beside this pattern, refuses those).
_REST = (f"(?:/{_PATH_CHAR}*(?:{_QUERY})?(?:{_FRAGMENT})?"
         f"|\\?(?:{_QUERY_CHAR}+(?:{_FRAGMENT})?|{_FRAGMENT})"
         f"|#{_QUERY_CHAR}+)?")
HTTP_URL_PATTERN = f"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_USERINFO})?{_HOST}(?::[0-9]+)?{_REST}$"
MAX_URL_CHARS = 2048


class Pattern(validate.Regexp):
    """marshmallow's Regexp, matched as the document's pattern is: to the end of the value. (Python's
    `$` also matches before a final newline, so "ada\\n" passed ^...$ here and failed the pattern
    in the document.)"""

    @overload
    def __call__(self, value: str) -> str: ...
    @overload
    def __call__(self, value: bytes) -> bytes: ...

    def __call__(self, value: str | bytes) -> str | bytes:
        pattern = cast(str, self.regex.pattern)  # our patterns are text
        if not isinstance(value, str) or re.fullmatch(pattern, value, self.regex.flags) is None:
            raise ValidationError(self._format_error(value))
        return value


class _HttpUrl(validate.URL):
    def __call__(self, value: str) -> str:
        value = super().__call__(value)
        if _HTTP_URL.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


_HTTP_URL = re.compile(HTTP_URL_PATTERN)


def http_url(description: str, *, required: bool = True) -> fields.String:
    """An absolute http or https URL the service will call, in RFC 3986 syntax (ASCII: a host in
    punycode, other characters percent-encoded). marshmallow's URL check stays; the pattern is the
    stricter of the two and the one the document shows."""
    return fields.String(required=required,
                         validate=[_HttpUrl(schemes={"http", "https"}, require_tld=False),
                                   validate.Length(max=MAX_URL_CHARS)],
                         metadata={"description": description, "format": "uri", "pattern": HTTP_URL_PATTERN})


# --- times in query filters -------------------------------------------------------------------------

_YEAR = "(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_MONTH_DAY = ("(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
              "|02-(?:0[1-9]|1[0-9]|2[0-8]))")
_LEAP_DAY = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29"
_DATE = f"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_DAY})"
_HOUR_MINUTE = "(?:[01][0-9]|2[0-3]):[0-5][0-9]"
_SECONDS = r":[0-5][0-9](?:\.[0-9]+)?"
_OFFSET = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
# Every date-time RFC 3339 has but leap seconds, a lowercase t or z, and year 0.
RFC3339_PATTERN = f"^{_DATE}T{_HOUR_MINUTE}{_SECONDS}{_OFFSET}$"
# The same, the seconds and the offset optional.
QUERY_DATETIME_PATTERN = f"^{_DATE}T{_HOUR_MINUTE}(?:{_SECONDS})?{_OFFSET}?$"
_PARTS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?(Z|[+-]\d\d:\d\d)?$")
_QUERY_DATETIME = re.compile(QUERY_DATETIME_PATTERN)
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)


class QueryDateTime(fields.Field):
    """A time in a query filter: an RFC 3339 date-time, whose seconds and offset may be left out
    (no offset: UTC). Loaded as an aware datetime in UTC; one an offset takes past year 1 or 9999
    is the earliest or latest time there is."""

    default_error_messages = {"invalid": "Not a date-time: 2026-03-01T09:00:00Z (RFC 3339; without an "
                                         "offset, UTC)."}

    def __init__(self, **kwargs: Any) -> None:
        metadata = {"anyOf": [{"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN},
                              {"type": "string", "pattern": QUERY_DATETIME_PATTERN}],
                    **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        if not isinstance(value, str) or not _QUERY_DATETIME.fullmatch(value):
            raise self.make_error("invalid")
        parts = _PARTS.fullmatch(value)
        assert parts is not None  # the same shape as _QUERY_DATETIME
        year, month, day, hour, minute, second, fraction, offset = parts.groups()
        local = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0),
                         int((fraction or "0")[:6].ljust(6, "0")))
        if offset in (None, "Z"):
            return local.replace(tzinfo=UTC)
        sign = 1 if offset[0] == "+" else -1
        shift = timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
        try:
            return (local - sign * shift).replace(tzinfo=UTC)
        except OverflowError:
            return _EARLIEST if sign > 0 else _LATEST


# --- the document ---------------------------------------------------------------------------------

def _takes_strings(prop: Mapping[str, Any]) -> bool:
    types = prop.get("type")
    return types == "string" or (isinstance(types, list) and "string" in types)


def no_nul_pattern(self: Any, field: fields.Field, ret: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """apispec attribute function: a free string of a request schema gets the no-NUL pattern (one
    with a pattern, a format or a fixed set of values already says what it takes)."""
    if isinstance(field.root, RequestSchema) and _takes_strings(ret) \
            and not {"pattern", "format", "enum", "anyOf", "oneOf"} & ret.keys():
        return {"pattern": NO_NUL_PATTERN}
    return {}


def blank_as_missing(self: Any, field: fields.Field, ret: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """apispec attribute function: in a BLANK_IS_MISSING query schema, a parameter (or, for a
    repeated one, each value) also takes "", read as not given."""
    root = field.root
    if not isinstance(root, RequestSchema) or not root.BLANK_IS_MISSING or ret.get("type") == "array":
        return {}
    outer: dict[str, Any] = {key: ret.pop(key) for key in ("description", "default") if key in ret}
    inner = dict(ret)
    ret.clear()
    return {**outer, "anyOf": [inner, {"type": "string", "const": "", "description": "Blank: not given"}]}


def document_requests(converter: Any) -> None:
    """Teach the document the rules above (apispec's marshmallow field converter)."""
    converter.add_attribute_function(no_nul_pattern)
    converter.add_attribute_function(blank_as_missing)
