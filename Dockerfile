# The API image: the web service only (no torch).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY service ./service
COPY migrations ./migrations
COPY exercises ./exercises
COPY wsgi.py gunicorn.conf.py ./
RUN useradd --system --uid 10001 gradquiz
USER gradquiz
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"]
