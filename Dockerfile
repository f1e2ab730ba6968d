# The localbo image: the HTTP service (`localbo serve`) and the policy worker (`localbo worker`).
#   docker build -t localbo .                      # CPU torch
#   docker build -t localbo-gpu --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
#   docker run -p 127.0.0.1:8000:8000 -e LOCALBO_TOKENS='change-me=admin' -v localbo-data:/data localbo
# BASE: any image with Python 3.11 and its venv module (scripts/container_check.sh builds one from Debian's
# packages with debootstrap, where Docker Hub is out of reach).
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
# a virtual environment: Debian's own Python refuses system-wide pip installs (PEP 668)
RUN python3 -m venv /opt/localbo
ENV PATH=/opt/localbo/bin:$PATH
WORKDIR /app

# torch first, from PyTorch's CPU index: PyPI's default wheel brings several GB of CUDA libraries.
ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --index-url "${TORCH_INDEX}" "${TORCH_SPEC}"
# every other dependency pinned (scripts/lock.sh writes the lock): the same versions in every build
COPY requirements.lock ./
RUN pip install -r requirements.lock

COPY pyproject.toml README.md ./
COPY service ./service
COPY migrations ./migrations
COPY client ./client
RUN pip install --no-deps . ./client && python -c "import localbo, localbo_client, botorch, celery"

RUN useradd --create-home --uid 10001 localbo && mkdir /data && chown localbo /data
USER localbo
# SQLite by default, in a directory the service may write (mount a volume there to keep it)
ENV LOCALBO_DATABASE_URL=sqlite:////data/localbo.db
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
# A non-loopback bind needs LOCALBO_TOKENS (or --insecure on a trusted network).
CMD ["localbo", "serve", "--host", "0.0.0.0", "--port", "8000"]
