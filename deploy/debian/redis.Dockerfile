# Redis from Debian's packages, for the compose stack where Docker Hub's redis:7 is out of reach
# (scripts/container_check.sh).
ARG BASE=localbo-base:bookworm
FROM ${BASE}
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/*
USER redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"]
