//! HTTP API, SSE, auth, metrics and web UI over the chorus bus.
