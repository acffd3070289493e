# One image for every component: `docker run jobpost <api|sequencer|topics|...>`. The default
# target is the product alone; `--target sandbox` adds the development tools for compose's
# job-board sandbox (`jobpost sandbox`).
FROM python:3.11-slim AS product-base
WORKDIR /app
# The locked dependencies first (their own layer, rebuilt only when the lock changes): every
# package at the version and sha256 requirements.txt names, from wheels only, nothing built.
COPY requirements.txt ./
RUN pip install --no-cache-dir --require-hashes --no-deps --only-binary :all: -r requirements.txt
COPY pyproject.toml README.md ./
COPY jobpost jobpost
COPY schemas schemas
COPY runtime runtime
COPY listing listing
COPY sequencer sequencer
COPY producer_api producer_api
COPY consumers consumers
COPY search_indexer search_indexer
COPY webhooks webhooks
# The project itself, without dependencies, built by the locked setuptools.
RUN pip install --no-cache-dir --no-deps --no-build-isolation . \
 && pip check \
 && rm -rf build \
 && mkdir -p /var/lib/jobpost && chown nobody /var/lib/jobpost
# Local stores (JOBPOST_STATE_DIR); compose mounts a volume here per service, which
# Docker creates owned by nobody, as this folder is.
ENV JOBPOST_STATE_DIR=/var/lib/jobpost
USER nobody
ENTRYPOINT ["jobpost"]
CMD ["--help"]

# The job-board sandbox of docker-compose.yml: the product plus jobpost-dev (dev/), which
# adds `jobpost sandbox`. Never deployed; its own target, its own image.
FROM product-base AS sandbox
USER root
COPY dev dev
RUN pip install --no-cache-dir --no-deps --no-build-isolation ./dev \
 && pip check \
 && rm -rf dev
USER nobody

# The default target (the last stage): the product alone.
FROM product-base AS product
