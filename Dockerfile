# Two stages. `build` makes the package's wheel; the image installs the dependencies, then that
# wheel, and holds neither the sources nor the build backend. Each stage first installs what
# pyproject.toml alone decides, so a change to the code rebuilds the last layers only and the
# dependencies come from the cache. The Dockerfile copies the sources by name; the .dockerignore keeps
# the rest out of the build context (tests, benchmarks, CI, local state).

FROM python:3.11-slim AS build
# pip, during the build only: no cache in the layers, no notices
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1
ARG PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# the build backend, as pyproject.toml's [build-system] requires it
COPY pyproject.toml ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires'], sep='\n')" \
        > build-requirements.txt \
 && python -m pip install -r build-requirements.txt
# the sources: setup.py's parts, and README.md (the package's description)
COPY setup.py README.md ./
COPY protocol/ protocol/
COPY coordinator/ coordinator/
COPY client/ client/
COPY sim/ sim/
COPY analytics/ analytics/
COPY cli/ cli/
RUN python -m pip wheel --no-deps --no-build-isolation --wheel-dir /dist .

FROM python:3.11-slim
ARG PIP_NO_CACHE_DIR=1
ARG PIP_DISABLE_PIP_VERSION_CHECK=1
ARG PIP_ROOT_USER_ACTION=ignore
ENV PYTHONUNBUFFERED=1
# the service runs unprivileged, as uid 10001, which owns the data dir (a new named volume
# mounted on /data starts with the ownership of the image's /data)
RUN groupadd --gid 10001 groupcoord \
 && useradd --uid 10001 --gid groupcoord --home-dir /data --no-create-home --shell /usr/sbin/nologin groupcoord \
 && mkdir /data \
 && chown groupcoord:groupcoord /data
# the dependencies alone, as pyproject.toml's [project] lists them
COPY pyproject.toml /tmp/deps/
RUN cd /tmp/deps \
 && python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" \
        > requirements.txt \
 && python -m pip install -r requirements.txt \
 && rm -rf /tmp/deps
# then the package, without them
COPY --from=build /dist/ /tmp/dist/
RUN python -m pip install --no-deps /tmp/dist/*.whl \
 && python -m pip check \
 && rm -rf /tmp/dist
# committed offsets and group metadata (--data-dir): -v groupcoord-data:/data keeps them
VOLUME /data
WORKDIR /data
USER 10001:10001
# Kafka (node i listens on 9092+i) and the admin listener (HTTP API, metrics, web page)
EXPOSE 9092 8080
# what clients are told to connect to (Metadata, FindCoordinator): clients on the docker host
# through -p 9092:9092; for clients in other containers, -e GROUPCOORD_ADVERTISED_LISTENERS=PLAINTEXT://<name>:9092
ENV GROUPCOORD_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
# healthy while the admin listener answers a read of the cluster's nodes from inside the container
# (python: the slim image has no curl; a GET needs no token). It starts after the Kafka listener, once
# the data dir is loaded. With another --http-port: docker run --health-cmd ... or --no-healthcheck
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-I", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/api/nodes', timeout=4)"]
# the admin listener is reachable from outside the container, so it needs -e GROUPCOORD_HTTP_TOKEN=...;
# options after the image name are added (`--topic orders:6`; `--http-host 127.0.0.1` keeps it inside)
ENTRYPOINT ["groupcoord", "serve", "--host", "0.0.0.0", "--data-dir", "/data", "--http-host", "0.0.0.0", "--http-port", "8080"]
