"""pydantic models, one per file format."""
