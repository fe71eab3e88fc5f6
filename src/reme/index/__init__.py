"""Retrieval layer: tokenizer, chunkers, metadata store, keyword engine, link graph, search, live sync."""
