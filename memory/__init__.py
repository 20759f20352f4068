"""Agent memory kept in the store: daily logs, curated memory, facts, scopes, history.

Each state of a scope's memory is a manifest (`memory.state`); what goes into one is cleaned of
secrets first, as it is laid out (`memory.entries`, `memory.redaction`); scopes keep memories
apart (`memory.scopes`); `memory.ops` holds what the commands and the MCP server do with them.
"""
