"""Interfaces over the application: HTTP (FastAPI), MCP and the `reme` CLI.

Kept import-free on purpose: the CLI imports only what a command needs, so `reme help` stays fast.
"""
