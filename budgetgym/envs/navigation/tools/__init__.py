"""The Navigation tools, one a file."""
