//! Model clients, tools, human confirmation, agents and flows.
