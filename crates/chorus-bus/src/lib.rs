//! Hub, pipelines, routing and durable delivery of chorus messages and handoffs.
