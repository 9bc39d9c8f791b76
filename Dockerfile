FROM python:3.11-slim
WORKDIR /app
COPY . .
RUN python -m pip install --no-cache-dir .
# committed offsets and group metadata (--data-dir): -v groupcoord-data:/data keeps them
VOLUME /data
# Kafka (node i listens on 9092+i) and the admin listener (HTTP API, metrics, web page)
EXPOSE 9092 8080
# what clients are told to connect to (Metadata, FindCoordinator): clients on the docker host
# through -p 9092:9092; for clients in other containers, -e GROUPCOORD_ADVERTISED_LISTENERS=PLAINTEXT://<name>:9092
ENV GROUPCOORD_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
# the admin listener is reachable from outside the container, so it needs -e GROUPCOORD_HTTP_TOKEN=...;
# options after the image name are added (`--topic orders:6`; `--http-host 127.0.0.1` keeps it inside)
ENTRYPOINT ["groupcoord", "serve", "--host", "0.0.0.0", "--data-dir", "/data", "--http-host", "0.0.0.0", "--http-port", "8080"]
