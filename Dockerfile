FROM python:3.11-slim
WORKDIR /app
COPY . .
RUN python -m pip install --no-cache-dir .
EXPOSE 9092
ENTRYPOINT ["groupcoord", "serve", "--host", "0.0.0.0"]
