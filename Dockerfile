# One image for every component: `docker run jobpost <api|sequencer|topics|...>`.
FROM python:3.11-slim
WORKDIR /app
# The locked dependencies first (their own layer, rebuilt only when the lock changes): every
# package at the version and sha256 requirements.txt names, from wheels only, nothing built.
COPY requirements.txt ./
RUN pip install --no-cache-dir --require-hashes --no-deps --only-binary :all: -r requirements.txt
COPY pyproject.toml README.md ./
COPY jobpost jobpost
COPY schemas schemas
COPY runtime runtime
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
