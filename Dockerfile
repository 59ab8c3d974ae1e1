# Two images from one file:
#   api    — the web service only (no torch):     docker build --target api .
#   worker — the grading workers, with CPU torch:  docker build --target worker .
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
RUN useradd --system --uid 10001 gradquiz

FROM base AS worker
# The CPU build of torch comes from PyTorch's CPU wheel index; installed first and pinned, so the
# requirements below find it satisfied and never pull a CUDA build.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
COPY requirements-worker.txt .
RUN pip install --no-cache-dir --index-url "$TORCH_INDEX_URL" torch==2.13.0 \
 && pip install --no-cache-dir -r requirements-worker.txt
COPY service ./service
COPY migrations ./migrations
COPY exercises ./exercises
COPY wsgi.py ./
USER gradquiz
CMD ["flask", "--app", "wsgi", "worker"]

FROM base AS api
COPY service ./service
COPY migrations ./migrations
COPY exercises ./exercises
COPY lesson ./lesson
COPY wsgi.py gunicorn.conf.py ./
USER gradquiz
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
