//! The chorus message model, handoff packets, data parts, JSON Schemas and validation.
