# The localbo image: the HTTP service (`localbo serve`) and the policy worker (`localbo worker`).
#   docker build -t localbo .                      # CPU torch
#   docker build -t localbo-gpu --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
WORKDIR /app

# torch first, from PyTorch's CPU index: PyPI's default wheel brings several GB of CUDA libraries.
ARG TORCH_SPEC=torch==2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --index-url "${TORCH_INDEX}" "${TORCH_SPEC}"

COPY pyproject.toml README.md ./
COPY service ./service
COPY migrations ./migrations
COPY client ./client
RUN pip install . ./client && python -c "import localbo, localbo_client, botorch, celery"

RUN useradd --create-home --uid 10001 localbo
USER localbo
EXPOSE 8000
# A non-loopback bind needs LOCALBO_TOKENS (or --insecure on a trusted network).
CMD ["localbo", "serve", "--host", "0.0.0.0", "--port", "8000"]
