"""The admin API against a loaded database: latency of statistics and search, memory of the CSV export.

    .venv/bin/python bench/load_attempts.py --database-url postgresql://postgres@127.0.0.1:5432/gq_bench
    .venv/bin/python bench/admin.py --database-url postgresql://postgres@127.0.0.1:5432/gq_bench

Requests go through the Flask test client in this process: the whole WSGI app (routing, API key
check, query validation, SQL, serialisation), without an HTTP socket. Each line is measured in
the same run, --requests times (default 200) after 5 unmeasured warm-up requests, and printed
with p50, p95 and p99 against the 100 ms target of issue 7:

- statistics: the overview, the most popular exercise's statistics, learners'
  progress (a different learner each request);
- search (GET /api/v1/admin/attempts):
  no filter, each filter the dashboard offers, and deep pages (each page's latency while
  following next_cursor 50 times from the first page);
- the CSV export: peak RSS growth of this process while streaming /api/v1/admin/attempts.csv for
  every row, and for about 1% of them (a time window), read chunk by chunk as a client would:
  memory that does not grow with the rows shows the export is streamed.

An admin key is made for the run and deleted afterwards. Nothing else is written.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import delete, func, select, text  # noqa: E402

from service import create_app  # noqa: E402
from service.auth import create_client  # noqa: E402
from service.extensions import db_session  # noqa: E402
from service.models import ApiClient, Attempt, Exercise, ExerciseOutcomeCount, ExerciseProgress, Role  # noqa: E402
from service.models.progress import LearnerProgress  # noqa: E402

TARGET_MS = 100.0
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_SIZE


class Bench:
    def __init__(self, app, key: str, requests: int) -> None:
        self.client, self.headers, self.requests = app.test_client(), {"Authorization": f"Bearer {key}"}, requests
        self.lines: list[tuple[str, list[float] | None, str]] = []

    def get(self, url: str):
        started = time.perf_counter()
        response = self.client.get(url, headers=self.headers)
        body = response.get_json()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {body}")
        return body, elapsed

    def measure(self, name: str, urls) -> None:
        """`urls`: a function of the request number giving the URL to get."""
        try:
            for n in range(5):
                self.get(urls(n))
            samples = [self.get(urls(n))[1] for n in range(self.requests)]
        except RuntimeError as exc:
            self.lines.append((name, None, str(exc)[:100]))
            return
        self.lines.append((name, samples, ""))

    def deep_pages(self, name: str, base: str, pages: int = 50) -> None:
        """Each page's latency while following next_cursor `pages` times from the first page."""
        samples, first, last = [], [], []
        try:
            self.get(base)
            while len(samples) < self.requests:
                body, ms = self.get(base)
                samples.append(ms)
                first.append(ms)
                for page in range(pages):
                    if body["next_cursor"] is None:
                        break
                    body, ms = self.get(f"{base}{'&' if '?' in base else '?'}cursor={body['next_cursor']}")
                    samples.append(ms)
                    if page == pages - 1:
                        last.append(ms)
        except RuntimeError as exc:
            self.lines.append((name, None, str(exc)[:100]))
            return
        note = f"page 1 mean {sum(first) / len(first):.1f} ms, page {pages + 1} mean " + (
            f"{sum(last) / len(last):.1f} ms" if last else "n/a (fewer pages)")
        self.lines.append((name, samples, note))

    def stream_csv(self, url: str) -> tuple[int, int, float, int]:
        """Read an export chunk by chunk, keeping nothing: (rows, bytes, seconds, peak RSS growth)."""
        gc.collect()
        baseline = peak = rss_bytes()
        started = time.perf_counter()
        response = self.client.get(url, headers=self.headers, buffered=False)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code}")
        rows = size = 0
        for n, chunk in enumerate(response.response):
            if isinstance(chunk, str):
                chunk = chunk.encode()
            size += len(chunk)
            rows += chunk.count(b"\n")
            if n % 64 == 0:
                peak = max(peak, rss_bytes())
        response.close()
        peak = max(peak, rss_bytes())
        return rows - 1, size, time.perf_counter() - started, peak - baseline

    def print_table(self, title: str) -> None:
        print(f"\n{title}")
        print(f"{'request':<58} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'target':>7}  ok")
        for name, samples, note in self.lines:
            if samples is None:
                print(f"{name:<58} {'-':>5} {'-':>8} {'-':>8} {'-':>8} {TARGET_MS:>7.0f}  --  skipped: {note}")
                continue
            p50, p95, p99 = (percentile(samples, q) for q in (0.50, 0.95, 0.99))
            ok = "yes" if p99 <= TARGET_MS else "NO"
            print(f"{name:<58} {len(samples):>5} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f} {TARGET_MS:>7.0f}  {ok}"
                  + (f"  ({note})" if note else ""))
        self.lines = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--skip-csv", action="store_true", help="leave out the CSV export's memory test")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    app = create_app({"database_url": args.database_url, "env": "testing"})
    with app.app_context():
        session = db_session()
        total = session.scalar(select(func.count()).select_from(Attempt))
        if not total:
            sys.exit("the database holds no attempts: load it first with\n"
                     f"  .venv/bin/python bench/load_attempts.py --database-url {args.database_url}")
        popular_id, popular = session.execute(
            select(Exercise.id, Exercise.slug).join(ExerciseProgress, ExerciseProgress.exercise_id == Exercise.id)
            .order_by(ExerciseProgress.attempts.desc()).limit(1)).one()
        popular_attempts = session.scalar(select(func.count()).select_from(Attempt)
                                          .where(Attempt.exercise_id == popular_id))
        learners = session.execute(
            select(LearnerProgress.learner, ApiClient.name).join(ApiClient, ApiClient.id == LearnerProgress.client_id)
            .distinct()).all()
        learners = rng.sample(learners, min(len(learners), args.requests))
        busiest = session.execute(text(
            "SELECT learner, count(*) FROM learner_progress GROUP BY learner ORDER BY 2 DESC LIMIT 1")).one()
        cause = session.scalar(select(ExerciseOutcomeCount.name).where(ExerciseOutcomeCount.kind == "cause")
                               .group_by(ExerciseOutcomeCount.name)
                               .order_by(func.sum(ExerciseOutcomeCount.count).desc()).limit(1))
        newest, oldest = session.execute(select(func.max(Attempt.created_at), func.min(Attempt.created_at))).one()
        one_percent = session.scalar(select(Attempt.created_at).order_by(Attempt.created_at.desc())
                                     .offset(total // 100).limit(1))
        admin, key = create_client(session, f"bench-admin-{uuid.uuid4().hex[:8]}", Role.ADMIN)
        session.commit()
        admin_id = admin.id
    backend = app.config.get("SETTINGS").sqlalchemy_url.split(":", 1)[0]
    print(f"{total:,} attempts in {backend}; popular exercise {popular} ({popular_attempts:,} attempts); "
          f"{len(learners)} learners sampled; likely cause {cause}")
    print("requests through the Flask test client in this process (WSGI app, auth, SQL, JSON; no socket); "
          f"{args.requests} measured per line after 5 warm-up requests")

    bench = Bench(app, key, args.requests)
    try:
        base = "/api/v1/admin"
        bench.measure("GET /admin/stats (overview)", lambda n: f"{base}/stats")
        bench.measure(f"GET /admin/exercises/{popular}/stats", lambda n: f"{base}/exercises/{popular}/stats")
        bench.measure("GET /admin/learners/<learner>/progress?client=",
                      lambda n: f"{base}/learners/{learners[n % len(learners)][0]}/progress?"
                                + urlencode({"client": learners[n % len(learners)][1]}))
        bench.measure(f"GET /admin/learners/{busiest[0][:12]}../progress (most exercises)",
                      lambda n: f"{base}/learners/{busiest[0]}/progress")
        bench.print_table("statistics")

        mid = oldest + (newest - oldest) / 2
        window = urlencode({"since": mid.isoformat(), "until": (mid + timedelta(days=1)).isoformat()})
        search = f"{base}/attempts"
        bench.measure("GET /admin/attempts (no filter)", lambda n: search)
        bench.measure(f"  ?exercise={popular}", lambda n: f"{search}?exercise={popular}")
        bench.measure("  ?learner=<a different learner each time>",
                      lambda n: f"{search}?" + urlencode({"learner": learners[n % len(learners)][0]}))
        bench.measure("  ?verdict=timeout (rare)", lambda n: f"{search}?verdict=timeout")
        bench.measure("  ?verdict=failed", lambda n: f"{search}?verdict=failed")
        bench.measure(f"  ?likely_cause={cause}", lambda n: f"{search}?likely_cause={cause}")
        bench.measure(f"  ?exercise={popular}&score_min=0.3&score_max=0.7",
                      lambda n: f"{search}?exercise={popular}&score_min=0.3&score_max=0.7")
        bench.measure("  ?since&until (one day)", lambda n: f"{search}?{window}")
        bench.measure("  ?sort=-score", lambda n: f"{search}?sort=-score")
        bench.deep_pages("  deep pages: next_cursor x50 (no filter)", search)
        bench.deep_pages("  deep pages: next_cursor x50 (?sort=score)", f"{search}?sort=score")
        bench.deep_pages(f"  deep pages: next_cursor x50 (?exercise={popular})", f"{search}?exercise={popular}")
        bench.print_table("search")

        csv_url = f"{base}/attempts.csv"
        if args.skip_csv:
            print("\nCSV export: skipped (--skip-csv)")
        else:
            print("\nCSV export, streamed and read chunk by chunk (peak RSS growth of this process, sampled):")
            print(f"{'export':<40} {'rows':>10} {'MB sent':>9} {'seconds':>8} {'rows/s':>9} {'peak RSS growth MB':>19}")
            for label, url in (("~1% of rows (?since=)", f"{csv_url}?" + urlencode({"since": one_percent.isoformat()})),
                               ("every row", csv_url)):
                rows, size, seconds, growth = bench.stream_csv(url)
                print(f"{label:<40} {rows:>10,} {size / 1e6:>9.1f} {seconds:>8.1f} {rows / seconds:>9,.0f} "
                      f"{growth / 1e6:>19.1f}")
    finally:
        with app.app_context():
            db_session().execute(delete(ApiClient).where(ApiClient.id == admin_id))
            db_session().commit()


if __name__ == "__main__":
    main()
