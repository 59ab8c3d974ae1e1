"""The patterns the OpenAPI document shows are the server's rules (service/schemas/request.py):
every string a pattern allows is one the server takes, and a JSON Schema validator's `format`
agrees where the document names one beside the pattern."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from marshmallow import ValidationError

from service.schemas.request import (
    HTTP_URL_PATTERN,
    QUERY_DATETIME_PATTERN,
    RFC3339_PATTERN,
    Pattern,
    QueryDateTime,
    http_url,
    nul_errors,
)

URI = jsonschema_rs.validator_for({"type": "string", "format": "uri"}, validate_formats=True)
DATE_TIME = jsonschema_rs.validator_for({"type": "string", "format": "date-time"}, validate_formats=True)
SETTINGS = settings(max_examples=500, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(st.from_regex(HTTP_URL_PATTERN, fullmatch=True).filter(lambda s: len(s) <= 2048))
def test_every_url_the_pattern_allows_is_a_uri_the_server_takes(url):
    assert URI.is_valid(url), url
    assert http_url("x").deserialize(url) == url


@SETTINGS
@given(st.from_regex(RFC3339_PATTERN, fullmatch=True))
def test_every_date_time_the_first_pattern_allows_is_rfc3339_and_taken(value):
    assert DATE_TIME.is_valid(value), value
    assert QueryDateTime().deserialize(value).tzinfo is UTC


@SETTINGS
@given(st.from_regex(QUERY_DATETIME_PATTERN, fullmatch=True))
def test_every_time_the_query_pattern_allows_is_taken(value):
    assert QueryDateTime().deserialize(value).tzinfo is UTC


@pytest.mark.parametrize("url", [
    "https://lms.example.edu/hooks/gradquiz", "http://127.0.0.1:9/hook", "https://moodle.example.edu/mod/lti/token.php",
    "https://lms.example/auth?client=1&x=%20y#frag", "http://[::1]:8080/x", "http://localhost", "HTTPS://EXAMPLE.COM/",
    "https://user:pw@host.example/", "https://xn--bcher-kva.example/",
])
def test_urls_that_were_taken_are_taken(url):
    assert http_url("x").deserialize(url) == url


@pytest.mark.parametrize("url", [
    "ftp://example.com/", "https://", "https://a.b", "http://a?", "http://a/<x>", "http://a/{x}", "http://a/%zz",
    "http://bücher.example/", "http://a/b c", "https://example.com/\n", "http://[:::::]/", "//example.com/",
])
def test_urls_outside_rfc3986_http_are_refused(url):
    assert not (re.fullmatch(HTTP_URL_PATTERN, url) and URI.is_valid(url))
    with pytest.raises(ValidationError):
        http_url("x").deserialize(url)


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-03-01T09:00:00Z", datetime(2026, 3, 1, 9, tzinfo=UTC)),
    ("2026-03-01T09:00", datetime(2026, 3, 1, 9, tzinfo=UTC)),  # no seconds, no offset: UTC
    ("2026-03-01T11:30:00.1234567+02:30", datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=UTC)),
    ("2024-02-29T00:00:00Z", datetime(2024, 2, 29, tzinfo=UTC)),
    ("9999-12-31T23:59:59-23:59", datetime.max.replace(tzinfo=UTC)),  # past year 9999: the latest
    ("0001-01-01T00:00:00+00:01", datetime.min.replace(tzinfo=UTC)),
])
def test_query_times(value, expected):
    assert QueryDateTime().deserialize(value) == expected


@pytest.mark.parametrize("value", [
    "2026-03-01", "2026-03-01 09:00:00Z", "2026-03-01t09:00:00z", "2023-02-29T00:00:00Z", "2026-02-30T00:00:00Z",
    "2026-12-31T23:59:60Z", "0000-01-01T00:00:00Z", "2026-03-01T09:00:00+24:00", "2026-03-01T09:00:00Z\n", "",
    "20260301T090000Z",
])
def test_query_times_outside_the_pattern_are_refused(value):
    assert not re.fullmatch(QUERY_DATETIME_PATTERN, value)
    with pytest.raises(ValidationError):
        QueryDateTime().deserialize(value)


def test_a_pattern_matches_to_the_end_of_the_value():
    rule = Pattern(r"^[a-z]+$")
    assert rule("ada") == "ada"
    with pytest.raises(ValidationError):
        rule("ada\n")  # re.match with `$` would take it


def test_nul_is_found_at_any_depth():
    assert nul_errors({"a": "x", "b": ["y", {"c": "z\x00"}], "d\x00": 1, "e": 2}) == {
        "b": {1: {"c": ["must not contain U+0000 (NUL)"]}}, "d\x00": ["must not contain U+0000 (NUL)"]}
    assert nul_errors({"a": "x", "b": [1, 2.0, None, True]}) is None
