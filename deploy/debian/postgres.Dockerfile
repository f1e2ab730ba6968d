# Postgres from Debian's packages, for the compose stack where Docker Hub's postgres:16 is out of reach
# (scripts/container_check.sh). It reads the official image's POSTGRES_USER/PASSWORD/DB on first start.
ARG BASE=localbo-base:bookworm
FROM ${BASE}
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/*
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data PATH=/usr/lib/postgresql/15/bin:$PATH
# the data directory exists in the image so that a new named volume takes its owner
RUN mkdir -p "$PGDATA" /var/run/postgresql && chown postgres "$PGDATA" /var/run/postgresql
USER postgres
EXPOSE 5432
CMD ["bash", "/usr/local/bin/postgres-entrypoint.sh"]
