# One image for every component: `docker run jobpost <api|sequencer|topics|...>`.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY jobpost jobpost
COPY schemas schemas
COPY producer_api producer_api
COPY consumers consumers
COPY search_indexer search_indexer
RUN pip install --no-cache-dir .
USER nobody
ENTRYPOINT ["jobpost"]
CMD ["--help"]
